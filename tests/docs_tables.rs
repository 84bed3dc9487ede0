//! `docs/API.md`'s op tables are generated from the op table: this test fails
//! when the committed file is not current. `KILN_BLESS=1 cargo test --test
//! docs_tables` rewrites it.

use std::path::Path;

const BEGIN: &str = "<!-- op-tables:begin -->\n";
const END: &str = "<!-- op-tables:end -->";

#[test]
fn api_doc_op_tables_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/API.md");
    let text = std::fs::read_to_string(&path).expect("docs/API.md");
    let start = text.find(BEGIN).expect("the op-tables begin marker") + BEGIN.len();
    let end = text.find(END).expect("the op-tables end marker");
    let want = kiln::core::op::markdown_tables();
    if text[start..end] == want {
        return;
    }
    if std::env::var_os("KILN_BLESS").is_some() {
        let updated = format!("{}{}{}", &text[..start], want, &text[end..]);
        std::fs::write(&path, updated).expect("write docs/API.md");
        return;
    }
    panic!("docs/API.md's op tables are out of date: run `KILN_BLESS=1 cargo test --test docs_tables`");
}
