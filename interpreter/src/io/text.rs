//! Text files and a character tokenizer: `load_text` reads a UTF-8 file
//! (`.gz` too) into a string; a vocabulary is the sorted set of a text's
//! characters, `encode` maps each character to its index there (an i64
//! tensor), `decode` maps indices back.

use super::{format_error, FileAccess};
use crate::core::error::{Error, Result};
use crate::core::Device;
use crate::tensor::Tensor;
use std::io::Read;
use std::path::Path;

/// The text of the UTF-8 file at `path` (gzip-compressed too).
pub fn load(files: &FileAccess, path: &Path) -> Result<String> {
    const OP: &str = "load_text";
    let mut src = files.open(OP, path, true)?;
    let mut bytes = Vec::new();
    src.reader
        .read_to_end(&mut bytes)
        .map_err(|e| super::Decode::Io(e).into_error(OP, path))?;
    String::from_utf8(bytes).map_err(|e| {
        format_error(
            OP,
            path,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// The distinct characters of `text`, sorted by code point.
pub fn vocabulary(text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    chars.sort_unstable();
    chars.dedup();
    chars.into_iter().collect()
}

/// The index in `vocab` of each character of `text`, as an i64 tensor.
pub fn encode(text: &str, vocab: &str, device: Device) -> Result<Tensor> {
    let index: std::collections::HashMap<char, i64> =
        vocab.chars().enumerate().map(|(i, c)| (c, i as i64)).collect();
    let ids = text
        .chars()
        .map(|c| {
            index.get(&c).copied().ok_or_else(|| {
                Error::invalid("encode", format!("the character {c:?} is not in the vocabulary"))
            })
        })
        .collect::<Result<Vec<i64>>>()?;
    let n = ids.len();
    Tensor::from_vec(ids, &[n], device)
}

/// The characters of `vocab` at the indices in `ids` (any integer tensor,
/// read in order).
pub fn decode(ids: &Tensor, vocab: &str) -> Result<String> {
    let chars: Vec<char> = vocab.chars().collect();
    ids.to_dtype(crate::core::DType::I64)?
        .to_vec_as::<i64>()?
        .into_iter()
        .map(|i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| chars.get(i).copied())
                .ok_or_else(|| {
                    Error::invalid(
                        "decode",
                        format!(
                            "index {i} is outside the vocabulary of {} characters",
                            chars.len()
                        ),
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_encode_decode_round_trip() {
        let text = "to be, or not to be";
        let v = vocabulary(text);
        assert_eq!(v, " ,benort");
        let ids = encode(text, &v, Device::Cpu).unwrap();
        assert_eq!(ids.shape(), &[19]);
        assert_eq!(&ids.to_vec_as::<i64>().unwrap()[..4], &[7, 5, 0, 2]);
        assert_eq!(decode(&ids, &v).unwrap(), text);
        assert!(encode("z", &v, Device::Cpu)
            .unwrap_err()
            .to_string()
            .contains("'z'"));
        let bad = Tensor::from_vec(vec![9i64], &[1], Device::Cpu).unwrap();
        assert!(decode(&bad, &v).unwrap_err().to_string().contains("index 9"));
    }
}
