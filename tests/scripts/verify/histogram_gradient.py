"""Checks tests/scripts/histogram_gradient.out against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/histogram_gradient.py`)."""
import math
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)
q = torch.tensor
d = q([1.0, 2.0, 1.0, 4.0, 2.5, 3.0, -1.0])
h = torch.histogram(d, 3)
hw = torch.histogram(d, 4, range=(0.0, 3.0), weight=q([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]), density=True)
f = q([1.0, 2.0, 4.0, 7.0, 11.0, 16.0])
xs = q([0.0, 1.0, 1.5, 3.5, 4.0, 6.0])
m = q([[1.0, 2.0, 6.0, 7.0], [3.0, 4.0, 5.0, 9.0], [0.0, -1.0, 2.0, 2.0]])
gm = torch.gradient(m, spacing=[0.5, 2.0])
x = q([[0.0, 0.0, 1.0], [3.0, 4.0, 0.0], [1.0, 1.0, 1.0], [-2.0, 0.5, 3.0]])
w = q([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0]])
idx = q([1, 2, 4, 0, 3])


def grads():
    wg = w.clone().requires_grad_(True)
    F.embedding_bag(idx, wg, q([0, 3]), mode="max").sum().backward()
    a = q([[0.3, -0.2], [0.7, 0.1]]).requires_grad_(True)
    torch.matrix_exp(a).sum().backward()
    return {"embedding_bag_max_grad": wg.grad, "matrix_exp_grad": a.grad}


expected = {
    "histogram": h.hist, "histogram_edges": h.bin_edges,
    "histogram_weighted": hw.hist, "histogram_weighted_edges": hw.bin_edges,
    "histogram_edges_given": torch.histogram(d, q([0.0, 1.0, 2.5, 4.0])).hist,
    "histogram_constant": torch.histogram(q([2.0, 2.0]), 2).bin_edges,
    "gradient": torch.gradient(f)[0], "gradient_spacing": torch.gradient(f, spacing=2.0)[0],
    "gradient_edge2": torch.gradient(f, edge_order=2)[0],
    "gradient_points": torch.gradient(f, spacing=(xs,))[0],
    "gradient_points_edge2": torch.gradient(f, spacing=(xs,), edge_order=2)[0],
    "gradient_2d_0": gm[0], "gradient_2d_1": gm[1],
    "gradient_dim1": torch.gradient(m, dim=1, edge_order=2)[0],
    "pdist": F.pdist(x), "pdist_p1": F.pdist(x, 1), "pdist_inf": F.pdist(x, math.inf),
    "renorm": torch.renorm(m, 1, 0, 10.0), "renorm_dim1": torch.renorm(m, 2, 1, 3.0),
    "embedding_bag_sum": F.embedding_bag(idx, w, q([0, 2]), mode="sum"),
    "embedding_bag_mean_2d": F.embedding_bag(q([[1, 2], [4, 0]]), w),
    "embedding_bag_max_empty": F.embedding_bag(idx, w, q([0, 2, 2]), mode="max"),
    "embedding_bag_padding": F.embedding_bag(idx, w, q([0, 1, 5]), include_last_offset=True, padding_idx=2),
    "embedding_bag_weights": F.embedding_bag(idx, w, q([0, 2]), mode="sum",
                                             per_sample_weights=q([1.0, 0.5, 2.0, 1.0, -1.0])),
    "matrix_exp": torch.matrix_exp(q([[0.0, 1.0], [-1.0, 0.0]])),
    "matrix_exp_batch": torch.linalg.matrix_exp(q([[[1.0, 2.0], [0.0, 3.0]], [[0.5, -0.25], [1.5, 0.0]]])),
    "matrix_exp_large": torch.matrix_exp(q([[4.0, 3.0, 0.0], [-2.0, 1.0, 5.0], [0.0, 1.0, -6.0]])),
    **grads(),
}
expected = {k: v.tolist() for k, v in expected.items()}
_, checked = check("histogram_gradient.out", expected, rtol=1e-12, atol=1e-13,
                   tols={"matrix_exp_large": (1e-11, 1e-12), "matrix_exp_grad": (1e-10, 1e-12)})
print(f"{checked} results agree with PyTorch {torch.__version__}")
