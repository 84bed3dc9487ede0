"""Checks tests/scripts/tensor_extras.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/tensor_extras.py`)."""
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)
q = torch.tensor
a = torch.zeros(3, 4).fill_diagonal_(5)
b = torch.zeros(7, 3).fill_diagonal_(1.0, wrap=True)
b2 = torch.zeros(7, 3).fill_diagonal_(1.0)
c = torch.zeros(3, 3, 3).fill_diagonal_(2)
p = torch.arange(6.0).reshape(2, 3)
put_inplace = p.clone().put_(q([2]), q([-3.0]))
t = torch.arange(6.0).reshape(2, 3).t()
sq = q([[4.0, 1.0, 0.0, 2.0], [1.0, 3.0, 1.0, 0.0], [0.0, 1.0, 5.0, 1.0], [2.0, 0.0, 1.0, 6.0]])
x = q([[0.1, 0.2, 0.4, 0.8], [0.5, -0.3, 0.9, 0.0]])
y = q([[3, 0, -1, 1], [1, 2, 0, -1]])


def grads():
    xg = x.clone().requires_grad_(True)
    F.multilabel_margin_loss(xg, y).backward()
    return {"multilabel_margin_loss_grad": xg.grad}


expected = {
    "fill_diagonal": a, "fill_diagonal_wrap": b, "fill_diagonal_tall": b2, "fill_diagonal_3d": c,
    "put": p.put(q([0, -1]), q([10.0, 20.0])),
    "put_accumulate": p.put(q([1, 1, 4]), q([5.0, 7.0, 1.0]), accumulate=True),
    "put_inplace": put_inplace,
    "sum_to_size": torch.arange(24.0).reshape(2, 3, 4).sum_to_size(3, 1),
    "sum_to_size_same": torch.arange(6.0).reshape(2, 3).sum_to_size(2, 3),
    "t_": t, "transpose_": t.transpose(0, 1),
    "isreal": torch.isreal(q([1.0, 2.0])),
    "tensorinv": torch.linalg.tensorinv(sq.reshape(2, 2, 4), 2),
    "tensorinv_ind1": torch.linalg.tensorinv(sq.reshape(4, 2, 2), 1),
    "tensorsolve": torch.linalg.tensorsolve(sq.reshape(2, 2, 2, 2), q([[1.0, 2.0], [3.0, 4.0]])),
    "tensorsolve_dims": torch.linalg.tensorsolve(sq.reshape(2, 2, 4), q([1.0, 0.0, -1.0, 2.0]), dims=(0, 1)),
    "multilabel_margin_loss": F.multilabel_margin_loss(x, y),
    "multilabel_margin_loss_none": F.multilabel_margin_loss(x, q([[3, 0, -1, 1], [-1, 2, 0, 1]]), reduction="none"),
    "multilabel_margin_loss_1d": F.multilabel_margin_loss(q([0.3, -0.1, 0.6]), q([2, -1, 0])),
    **grads(),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("tensor_extras.out", expected, rtol=1e-12, atol=1e-14)
base = torch.arange(12).reshape(3, 4)
for line in (
    "unsqueeze_: [3, 1, 2]",
    f"storage_offset: {base.narrow(0, 1, 2).narrow(1, 2, 1).storage_offset()}",
    f"is_nonzero: {str(q([3]).is_nonzero()).lower()} {str(q([[0.0]]).is_nonzero()).lower()}",
    f"is_same_size: {str(torch.ones(2, 3).is_same_size(torch.zeros(2, 3))).lower()} "
    f"{str(torch.ones(2, 3).is_same_size(torch.ones(3, 2))).lower()}",
):
    assert line in text, line
print(f"{checked} results agree with PyTorch {torch.__version__}")
