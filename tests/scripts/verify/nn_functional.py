"""Checks tests/scripts/nn_functional.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/nn_functional.py`)."""
import math
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)
x = torch.tensor([-30.0, -3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 30.0])
m = torch.tensor([[1.0, -2.0, 3.0, 0.5], [0.0, 4.0, -1.0, 2.0]])
img = torch.tensor([[[-1.0, 2.0], [3.0, -4.0]], [[-5.0, 6.0], [-7.0, 8.0]]]).reshape(1, 2, 2, 2)
w = torch.tensor([[1.0, 0.0, -1.0, 2.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 2.0, 0.0, 1.0]])
b = torch.tensor([0.1, -0.2, 0.3])
bw = torch.arange(24.0).reshape(2, 3, 4) / 10
table = torch.arange(15.0).reshape(5, 3)
a = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 0.5, 2.0]])
c = torch.tensor([[2.0, 1.0, 0.0], [1.0, 1.0, 1.0], [3.0, -1.0, 2.0]])
big = (torch.arange(90.0).reshape(30, 3) / 7).sin()
up = torch.tensor([1.0, -2.0, 0.5, 3.0, 1.0, -1.0, 0.25, 2.0])
lup = torch.tensor([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]])


def linear_grads(act):
    lx, lw, lb = (t.clone().requires_grad_(True) for t in (m, w, b))
    y = F.linear(lx, lw, lb)
    (F.relu(y) if act == "relu" else F.gelu(y, approximate="tanh")).backward(lup)
    return {f"linear_{act}_grad_x": lx.grad, f"linear_{act}_grad_w": lw.grad, f"linear_{act}_grad_b": lb.grad}


def gelu_grad(approximate):
    xg = x.clone().requires_grad_(True)
    F.gelu(xg, approximate=approximate).backward(up)
    return xg.grad


expected = {
    "softplus": F.softplus(x), "softplus_beta": F.softplus(x, 2.0),
    "softplus_opts": F.softplus(x, beta=0.5, threshold=1.0), "hardtanh": F.hardtanh(x),
    "hardtanh_range": F.hardtanh(x, -2.0, 0.75), "leaky_relu": F.leaky_relu(x),
    "leaky_relu_slope": F.leaky_relu(x, 0.2), "elu": F.elu(x), "elu_alpha": F.elu(x, alpha=0.5),
    "celu": F.celu(x, 2.0), "gelu_tanh": F.gelu(x, approximate="tanh"), "gelu_none": F.gelu(x),
    "gelu_none_grad": gelu_grad("none"), "gelu_tanh_grad": gelu_grad("tanh"),
    "tanhshrink": F.tanhshrink(x), "hardshrink": F.hardshrink(x), "softshrink": F.softshrink(x, 1.0),
    "threshold": F.threshold(x, 0.1, 20.0), "rrelu_eval": F.rrelu(x),
    "softmin": F.softmin(m, 1), "softmin_0": F.softmin(m, dim=0), "glu": F.glu(m), "glu_0": F.glu(m, 0),
    "prelu_one": F.prelu(m, torch.tensor([0.25])), "prelu_channels": F.prelu(img, torch.tensor([0.1, 0.5])),
    "linear": F.linear(m, w, b), "linear_nobias": F.linear(m, w),
    "linear_relu": F.relu(F.linear(m, w, b)),
    "linear_gelu_tanh": F.gelu(F.linear(m, w, b), approximate="tanh"),
    "linear_gelu_kw": F.gelu(F.linear(m, w, b)),
    **linear_grads("relu"), **linear_grads("gelu_tanh"),
    "bilinear": F.bilinear(m[:, :3], m, bw, torch.tensor([1.0, -1.0])), "bilinear_nobias": F.bilinear(m[:, :3], m, bw),
    "embedding": F.embedding(torch.tensor([[0, 4], [2, 2]]), table),
    "embedding_pad": F.embedding(torch.tensor([1, 3]), table, padding_idx=3),
    "normalize": F.normalize(m), "normalize_p1_dim0": F.normalize(m, p=1.0, dim=0),
    "cosine_similarity": F.cosine_similarity(a, c), "cosine_similarity_0": F.cosine_similarity(a, c, 0),
    "cosine_similarity_bcast": F.cosine_similarity(a, torch.tensor([1.0, 1.0, 1.0]), dim=-1),
    "pairwise_distance": F.pairwise_distance(a, c), "pairwise_distance_p1": F.pairwise_distance(a, c, p=1.0, keepdim=True),
    "cdist": torch.cdist(a, c), "cdist_p1": torch.cdist(a, c, 1.0), "cdist_inf": torch.cdist(a, c, p=math.inf),
    "cdist_mm": torch.cdist(big, big[:4]).sum(0), "dropout_eval": F.dropout(x, 0.5, False),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("nn_functional.out", expected, rtol=1e-12, atol=1e-14)
for line in ("dropout_values", "dropout_kept", "dropout_grad", "dropout_same_mask_bf16", "dropout_kept_f64"):
    assert f"{line}: true" in text, line
assert "dropout_channels_last: true true" in text
print(f"{checked} results agree with PyTorch {torch.__version__}")
