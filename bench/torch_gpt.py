"""The character GPT of stdlib/nn_transformer.rhai (nn::gpt) in PyTorch:
pre-norm blocks with causal SDPA, learned positions, a head tied to the
token embedding. bench/attention_bench.py and bench/profile_step.py use it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, h, p):
        super().__init__()
        self.h, self.p = h, p
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.query, self.key, self.value, self.out = (nn.Linear(d, d) for _ in range(4))
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, l, d = x.shape
        n = self.norm1(x)
        split = lambda t: t.view(b, l, self.h, d // self.h).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.query(n)), split(self.key(n)), split(self.value(n)),
                                           is_causal=True, dropout_p=self.p if self.training else 0.0)
        x = x + self.drop(self.out(a.transpose(1, 2).reshape(b, l, d)))
        return x + self.drop(self.proj(F.gelu(self.fc(self.norm2(x)), approximate="tanh")))


class GPT(nn.Module):
    def __init__(self, vocab, d=384, layers=6, heads=6, block=256, p=0.2):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads, p) for _ in range(layers))
        self.norm, self.drop = nn.LayerNorm(d), nn.Dropout(p)

    def forward(self, idx):
        h = self.drop(self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device)))
        for blk in self.blocks:
            h = blk(h)
        return self.norm(h) @ self.tokens.weight.t()
