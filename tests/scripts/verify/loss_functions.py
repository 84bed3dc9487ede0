"""Checks tests/scripts/loss_functions.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/loss_functions.py`)."""
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)
p = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]])
t = torch.tensor([[1.0, -1.5, 0.0], [2.5, 0.25, 1.5]])
rate = torch.tensor([[0.5, 1.0, 2.0], [3.0, 0.25, 4.0]])
counts = torch.tensor([[0.0, 1.0, 3.0], [2.0, 0.0, 5.0]])
vr = torch.tensor([[0.5, 1.0, 2.0], [0.1, 1e-9, 3.0]])
logits = torch.tensor([[1.0, 2.0, 0.5, -1.0], [0.1, 0.2, 3.0, 0.0], [-2.0, 1.0, 0.0, 0.5]])
labels = torch.tensor([1, 2, 0])
cw = torch.tensor([1.0, 2.0, 0.5, 3.0])
logp = F.log_softmax(logits, 1)
probs = torch.tensor([[0.1, 0.6, 0.2, 0.1], [0.0, 0.0, 1.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
img = (torch.arange(24.0).reshape(2, 3, 2, 2) / 5).sin()
img_y = torch.tensor([[[0, 1], [2, 1]], [[2, 2], [0, 1]]])
prob = torch.tensor([[0.9, 0.2, 0.5], [0.01, 0.7, 1.0]])
bin_ = torch.tensor([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]])
lq = torch.tensor([[-1.0, -2.0, -0.5], [-0.1, -3.0, -1.5]])
q = torch.tensor([[0.2, 0.0, 0.8], [0.5, 0.25, 0.25]])
pm = torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]])
x1 = torch.tensor([0.5, -1.0, 2.0, 0.0])
x2 = torch.tensor([1.0, -2.0, 2.0, 1.0])
y = torch.tensor([1.0, -1.0, 1.0, -1.0])
a = torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [-1.0, 0.5, 2.0]])
c = torch.tensor([[2.0, 1.0, 0.0], [1.0, 1.0, 1.0], [3.0, -1.0, 2.0]])
n = torch.tensor([[0.0, 2.0, 2.0], [1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]])
w3 = torch.tensor([1.0, 2.0, 3.0])
expected = {
    "mse": F.mse_loss(p, t), "mse_sum": F.mse_loss(p, t, reduction="sum"), "mse_none": F.mse_loss(p, t, reduction="none"),
    "l1": F.l1_loss(p, t), "smooth_l1": F.smooth_l1_loss(p, t),
    "smooth_l1_beta": F.smooth_l1_loss(p, t, beta=0.6, reduction="none"), "huber": F.huber_loss(p, t),
    "huber_delta": F.huber_loss(p, t, delta=0.6, reduction="none"), "poisson": F.poisson_nll_loss(p, counts),
    "poisson_rate_full": F.poisson_nll_loss(rate, counts, log_input=False, full=True, reduction="none"),
    "gaussian": F.gaussian_nll_loss(p, t, vr), "gaussian_full": F.gaussian_nll_loss(p, t, vr, full=True, reduction="none"),
    "gaussian_row_var": F.gaussian_nll_loss(p, t, torch.tensor([0.5, 2.0]), reduction="sum"),
    "nll": F.nll_loss(logp, labels), "nll_weight": F.nll_loss(logp, labels, weight=cw),
    "nll_ignore": F.nll_loss(logp, torch.tensor([1, -100, 0]), weight=cw),
    "nll_ignore_none": F.nll_loss(logp, torch.tensor([1, 3, 0]), ignore_index=3, reduction="none"),
    "ce": F.cross_entropy(logits, labels), "ce_weight": F.cross_entropy(logits, labels, weight=cw),
    "ce_weight_smooth": F.cross_entropy(logits, torch.tensor([1, 2, -100]), weight=cw, label_smoothing=0.2),
    "ce_smooth_sum": F.cross_entropy(logits, labels, label_smoothing=0.1, reduction="sum"),
    "ce_probs": F.cross_entropy(logits, probs),
    "ce_probs_weight_smooth": F.cross_entropy(logits, probs, weight=cw, label_smoothing=0.3, reduction="none"),
    "ce_2d": F.cross_entropy(img, img_y), "ce_2d_none": F.cross_entropy(img, img_y, weight=w3, reduction="none"),
    "ce_1d": F.cross_entropy(torch.tensor([1.0, 2.0, 0.5]), torch.tensor(1)),
    "bce": F.binary_cross_entropy(prob, bin_), "bce_weight": F.binary_cross_entropy(prob, bin_, weight=w3, reduction="none"),
    "bce_logits": F.binary_cross_entropy_with_logits(p, bin_),
    "bce_logits_pos": F.binary_cross_entropy_with_logits(p, bin_, pos_weight=torch.tensor([1.0, 2.0, 0.5]), reduction="none"),
    "kl": F.kl_div(lq, q), "kl_batchmean": F.kl_div(lq, q, reduction="batchmean"),
    "kl_log_target": F.kl_div(lq, lq * 0.5, log_target=True, reduction="sum"),
    "soft_margin": F.soft_margin_loss(p, pm), "multilabel_soft_margin": F.multilabel_soft_margin_loss(p, bin_),
    "multilabel_soft_margin_w": F.multilabel_soft_margin_loss(p, bin_, weight=w3, reduction="none"),
    "multi_margin": F.multi_margin_loss(logits, labels),
    "multi_margin_p2": F.multi_margin_loss(logits, labels, p=2, margin=0.5, weight=cw, reduction="none"),
    "margin_ranking": F.margin_ranking_loss(x1, x2, y),
    "margin_ranking_m": F.margin_ranking_loss(x1, x2, y, margin=0.5, reduction="none"),
    "hinge_embedding": F.hinge_embedding_loss(x1, y), "hinge_embedding_m": F.hinge_embedding_loss(x1, y, 2.0, reduction="none"),
    "cosine_embedding": F.cosine_embedding_loss(a, c, torch.tensor([1, -1, 1])),
    "cosine_embedding_m": F.cosine_embedding_loss(a, c, torch.tensor([1, -1, -1]), margin=0.1, reduction="none"),
    "triplet": F.triplet_margin_loss(a, c, n),
    "triplet_opts": F.triplet_margin_loss(a, c, n, margin=2.0, p=1.0, swap=True, reduction="none"),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("loss_functions.out", expected, rtol=1e-12, atol=1e-14)
print(f"{checked} results agree with PyTorch {torch.__version__}")
