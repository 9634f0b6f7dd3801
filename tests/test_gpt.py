import math
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from pipeline.lm import fused_loss
from pipeline.lm.model import GPT, GPT2_VOCAB, GPTConfig, attention, causal_mask
from tests.helpers import ROOT


def test_simplified_attention_matches_the_seed_example():
    # No projections, no scaling: weights = softmax(x·xᵀ) with the causal mask.
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    scores = (x @ x.T).masked_fill(causal_mask(3), float("-inf"))
    a = F.softmax(scores, dim=-1) @ x
    assert torch.allclose(a[2], torch.tensor([0.79, 0.79]), atol=0.005)
    assert torch.allclose(a[1], torch.tensor([0.27, 0.73]), atol=0.005)


def test_scaled_attention_with_identity_weights():
    # q = k = v = x (W = I), scores ÷ √d_k with d_k = 2: x3 attends with weights ≈ (0.25, 0.25, 0.50).
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    weights = F.softmax(x[2] @ x.T / math.sqrt(2), dim=-1)
    assert torch.allclose(weights, torch.tensor([0.25, 0.25, 0.50]), atol=0.005)
    out = attention(x[None], x[None], x[None])[0]
    assert torch.allclose(out[2], torch.tensor([0.75, 0.75]), atol=0.005)
    assert torch.allclose(out[0], x[0])  # the first token sees only itself


def test_causal_mask_hides_ten_of_twenty_five_cells():
    mask = causal_mask(5)
    assert mask.sum().item() == 10
    assert not mask.diagonal().any()


def test_without_positions_and_mask_attention_is_permutation_equivariant():
    torch.manual_seed(0)
    x = torch.randn(1, 6, 8)
    perm = torch.randperm(6)
    out = attention(x, x, x, causal=False)
    out_perm = attention(x[:, perm], x[:, perm], x[:, perm], causal=False)
    assert torch.allclose(out[:, perm], out_perm, atol=1e-6)


def test_future_tokens_do_not_change_past_outputs():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=16)).eval()
    idx = torch.randint(0, GPT2_VOCAB, (1, 10))
    changed = idx.clone()
    changed[0, 6:] = torch.randint(0, GPT2_VOCAB, (4,))
    a, _ = model(idx)
    b, _ = model(changed)
    assert torch.allclose(a[0, :6], b[0, :6], atol=1e-5)
    assert not torch.allclose(a[0, 6:], b[0, 6:], atol=1e-3)


def test_fast_attention_equals_explicit():
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, n_head=4, n_embd=64, block_size=32)
    slow = GPT(cfg).eval()
    fast = GPT(GPTConfig(**{**cfg.__dict__, "fast_attention": True})).eval()
    fast.load_state_dict(slow.state_dict())
    idx = torch.randint(0, GPT2_VOCAB, (2, 32))
    assert torch.allclose(slow(idx)[0], fast(idx)[0], atol=1e-5)


def test_tied_unembedding_padded_vocab_and_param_count():
    model = GPT(GPTConfig())
    assert model.head.weight is model.tok_emb.weight
    assert model.tok_emb.weight.shape == (50304, 128)
    # PA6a's 4×128 model: 50304·128 embedding + 64·128 positions + 4 blocks of 12·128² + biases and norms
    assert 7_200_000 < model.num_params() < 7_300_000


def test_post_ln_option_changes_the_block_arrangement():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=8, post_ln=True)).eval()
    x = torch.randn(1, 8, 16)
    block = model.blocks[0]
    t3 = block.ln1(x + block.attn(x))
    expected = block.ln2(t3 + block.mlp(t3))
    assert torch.allclose(block(x), expected, atol=1e-6)
    # every block output is layer-normed: zero mean per position
    assert torch.allclose(block(x).mean(-1), torch.zeros(1, 8), atol=1e-5)


@pytest.mark.parametrize("chunk_rows", [20, fused_loss.CHUNK_ROWS])  # 48 rows: chunks of 20+20+8, or one
def test_fused_loss_equals_cross_entropy_and_its_gradients(monkeypatch, chunk_rows):
    monkeypatch.setattr(fused_loss, "CHUNK_ROWS", chunk_rows)
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=16))
    idx = torch.randint(0, GPT2_VOCAB, (3, 16))
    targets = torch.randint(0, GPT2_VOCAB, (3, 16))
    _, fused = model(idx, targets)
    fused.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    _, plain = model(idx, targets, fused_loss=False)
    plain.backward()
    assert abs(fused.item() - plain.item()) < 1e-5
    assert abs(plain.item() - math.log(50304)) < 0.05  # untrained: near uniform
    for n, p in model.named_parameters():
        assert torch.allclose(grads[n], p.grad, atol=1e-6), n


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_target_whose_probability_underflows_still_gets_its_exact_loss(precision):
    import torch.nn.functional as F

    torch.manual_seed(0)
    w = torch.randn(300, 16)
    h = torch.randn(6, 16)
    h[0] *= 40  # a wide row: its least likely token lies hundreds of nats below the likeliest
    t = torch.randint(0, 300, (6,))
    bf16 = precision == "bf16"
    logits = h @ w.t() if not bf16 else (h.bfloat16() @ w.bfloat16().t()).float()
    t[0] = logits[0].argmin()
    hf, wf = h.clone().requires_grad_(), w.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = fused_loss.head_loss(hf, wf, t)
    loss.backward()
    rows = F.cross_entropy(logits.double(), t, reduction="none")
    assert rows[0] > 150  # e^-150: far below fp32's smallest normal number, so −log p alone would be inf
    assert torch.isfinite(loss) and abs(loss.item() - rows.mean().item()) < 1e-4 * rows.mean().item()
    exact = logits.double().requires_grad_()
    F.cross_entropy(exact, t).backward()
    assert torch.allclose(hf.grad.double(), exact.grad @ (w.double() if not bf16 else w.bfloat16().double()),
                          atol=1e-2 if bf16 else 1e-6)


def watch_matmuls():
    """A dispatch mode that records the operand dtypes of every matmul it sees (below autocast)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Matmuls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.operands = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.split(".")[0] in ("mm", "addmm", "addmm_"):
                self.operands.append({a.dtype for a in args if isinstance(a, torch.Tensor)})
            return func(*args, **(kwargs or {}))

    return Matmuls()


def test_an_evaluation_under_no_grad_runs_only_the_logits_matmul():
    torch.manual_seed(0)
    h = torch.randn(48, 32, requires_grad=True)
    w = torch.randn(1000, 32, requires_grad=True)
    t = torch.randint(0, 1000, (48,))
    with watch_matmuls() as training:
        loss = fused_loss.head_loss(h, w, t)
    with torch.no_grad(), watch_matmuls() as evaluation:
        same = fused_loss.head_loss(h, w, t)
    assert (len(training.operands), len(evaluation.operands)) == (3, 1)  # logits, and in training both gradients
    assert same.item() == loss.item() and same.grad_fn is None


def test_sampling_never_emits_padding_ids():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=8)).eval()
    with torch.no_grad():
        model.tok_emb.weight[GPT2_VOCAB:] = 50.0  # make padding ids by far the likeliest
    out = model.generate(torch.zeros(1, 1, dtype=torch.long), 30, temperature=1.0, top_k=None,
                         generator=torch.Generator().manual_seed(0))
    assert out.max().item() < GPT2_VOCAB


def test_sampling_unembeds_only_the_last_position_with_the_logits_of_a_full_forward():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=8)).eval()
    rows = []
    model.head.register_forward_hook(lambda module, inputs, output: rows.append(inputs[0].shape))
    out = model.generate(torch.zeros(2, 1, dtype=torch.long), 12, generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 13) and rows == [(2, 16)] * 12  # one row per sample and step, past the block size too
    ctx = out[:, -8:]
    with torch.no_grad():
        full, _ = model(ctx)
        assert torch.allclose(model.head(model.hidden(ctx)[:, -1]), full[:, -1], atol=1e-6)


def test_bf16_logits_get_an_fp32_softmax_and_gradients_good_to_a_bf16_rounding():
    torch.manual_seed(0)
    rows = torch.arange(48)
    t = torch.randint(0, 3000, (48,))
    logits = 4 * torch.randn(48, 3000)
    logits[rows[24:], t[24:]] += torch.linspace(8, 30, 24)  # confident rows, up to p = 1 − 1e-7
    logits = logits.bfloat16()
    exact = torch.softmax(logits.float(), 1)
    work = logits.clone()
    p_target = fused_loss.softmax_rows(work, t, need_grad=True)
    assert p_target.dtype == torch.float32
    assert ((p_target.log() - exact[rows, t].log()).abs() <= 2 ** -8).all()  # a token's loss, in nats
    others = F.one_hot(t, 3000) == 0
    assert torch.equal(work[others], exact.bfloat16()[others])  # the fp32 softmax, rounded to bf16 once
    grad, exact_grad = work[rows, t].float(), exact[rows, t] - 1
    # p − 1 of a confident target comes from the rest of its row: right to about a bf16 rounding, where
    # subtracting a bf16 p would leave nothing of it
    assert ((grad - exact_grad).abs() <= 2 ** -7 * exact_grad.abs() + 1e-7).all()
    assert (exact_grad[24:] > -2 ** -9).any()


def test_under_bf16_autocast_the_head_multiplies_in_bf16_and_keeps_the_loss_in_fp32():
    import torch.nn.functional as F

    torch.manual_seed(0)
    h = torch.randn(48, 32, requires_grad=True)
    w = (0.3 * torch.randn(1000, 32)).requires_grad_()
    t = torch.randint(0, 1000, (48,))
    with torch.autocast("cpu", dtype=torch.bfloat16), watch_matmuls() as seen:
        loss = fused_loss.head_loss(h, w, t)
    loss.backward()
    assert seen.operands == [{torch.bfloat16}] * 3  # the logits and both gradients
    low = (h.detach().bfloat16() @ w.detach().bfloat16().t()).float()  # bf16 products, fp32 softmax and loss
    # Each target probability is rounded to bf16 once (relative error ≤ 2⁻⁸/(1 + 2⁻⁸)): ≤ 2⁻⁸ nats each.
    assert loss.dtype == torch.float32 and abs(loss.item() - F.cross_entropy(low, t).item()) <= 2 ** -8
    hf, wf = h.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    exact = F.cross_entropy(hf @ wf.t(), t)
    exact.backward()
    assert loss.item() != exact.item() and abs(loss.item() - exact.item()) < 2e-2
    for ours, theirs in ((h.grad, hf.grad), (w.grad, wf.grad)):
        assert ours.dtype == torch.float32
        assert F.cosine_similarity(ours.flatten(), theirs.flatten(), dim=0) > 0.999


def test_the_model_and_its_loss_leave_torch_dynamo_unloaded():
    """torch._dynamo costs 1.3 s of a process's start: a run that scores its own sentences with a trained model
    needs none of it (torch's optimizers load it, so training does)."""
    code = ("import sys, torch; from pipeline.lm.model import GPT, GPTConfig; "
            "m = GPT(GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=4)); x = torch.zeros(1, 4, dtype=torch.long); "
            "m(x, x)[1].backward(); print('torch._dynamo' in sys.modules)")
    told = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert told.returncode == 0 and told.stdout.strip() == "False", told.stderr[-2000:]


def test_torch_compile_leaves_the_fused_head_out_of_its_graphs():
    """Compiled, the head's loops would be unrolled into one graph: every logits-sized (N, vocabulary) tensor stays
    outside what torch.compile captures, and the loss and gradients are eager's."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=8))
    x, y = torch.randint(0, GPT2_VOCAB, (2, 8)), torch.randint(0, GPT2_VOCAB, (2, 8))
    _, eager = model(x, y)
    eager.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    _, compiled = torch.compile(model, backend=keep)(x, y)
    compiled.backward()
    widths = {n.meta["example_value"].shape[-1] for gm in graphs for n in gm.graph.nodes
              if isinstance(n.meta.get("example_value"), torch.Tensor) and n.meta["example_value"].dim()}
    assert graphs and model.cfg.vocab_size not in widths and model.cfg.n_embd in widths
    assert torch.equal(compiled, eager)
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads))
