"""A simulated language model for the real lm-evaluation-harness CLI.

Importing this module registers the model ``mdad-sim`` with lm-eval's model registry,
so ``lm-eval run --model mdad-sim`` finds it when the CLI is started from a process
that imported it first (see `main`):

    PYTHONPATH=tests/lm_eval_fixture python -m mdad_simmodel run --model mdad-sim \\
        --model_args pretrained=sim-01,ability=0.6,seed=3 --tasks ... --include_path ...

Each multiple-choice document is answered correctly with probability
``sigmoid(logit(ability) - doc["difficulty"])`` (a Rasch model), decided by a uniform
number hashed from (seed, task, ``doc["id"]``): the same model answers a document the
same way in a full run and in a ``--samples`` run. The option it picks gets the highest
log-likelihood; all log-likelihoods are distinct, so lm-eval's argmax (``acc``) is
exactly that choice. Only ``loglikelihood`` is implemented.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

NAME = "mdad-sim"
BUILTIN_TASKS_LEFT_OUT = "lm-eval's built-in tasks left out of the task index"


def unit_draws(*key: object, count: int) -> list[float]:
    """`count` numbers in [0, 1) hashed from `key`: the same key, the same numbers."""
    digest = hashlib.sha256("|".join(map(str, key)).encode()).digest()
    return [int.from_bytes(digest[4 * k:4 * k + 4], "big") / 2**32 for k in range(count)]


def correct_probability(ability: float, difficulty: float) -> float:
    """Rasch model: ability is the chance of answering a document of difficulty 0."""
    return 1.0 / (1.0 + math.exp(difficulty - math.log(ability / (1.0 - ability))))


def option_loglikelihoods(ability: float, seed: int, task: str, doc: dict[str, Any]
                          ) -> list[float]:
    """One log-likelihood per option of `doc`; the model's pick has the largest."""
    n = len(doc["choices"])
    answer, pick_u, *order_u = unit_draws(seed, task, doc["id"], count=n + 2)
    gold = int(doc["answer"])
    if answer < correct_probability(ability, float(doc["difficulty"])):
        pick = gold
    else:
        wrong = [k for k in range(n) if k != gold]
        pick = wrong[int(pick_u * len(wrong))]
    rest = sorted((k for k in range(n) if k != pick), key=lambda k: order_u[k])
    values = [0.0] * n
    for rank, k in enumerate([pick, *rest]):
        values[k] = -1.0 - 0.75 * rank - 0.01 * order_u[k]
    return values


@register_model(NAME)
class SimulatedModel(LM):
    """An lm-eval model whose answers are set by its ability and seed (``--model_args
    pretrained=NAME,ability=0.6,seed=3``; ``pretrained`` names its output folder)."""

    def __init__(self, ability: float = 0.5, seed: int = 0, pretrained: str = NAME,
                 **_: Any) -> None:
        super().__init__()
        self.ability = float(ability)
        self.seed = int(seed)
        self.name = str(pretrained)
        if not 0.0 < self.ability < 1.0:
            raise ValueError(f"ability must be in (0, 1); got {ability}")

    def loglikelihood(self, requests: list, disable_tqdm: bool = False
                      ) -> list[tuple[float, bool]]:
        out = []
        for request in requests:
            values = option_loglikelihoods(self.ability, self.seed, request.task_name,
                                           request.doc)
            out.append((values[request.idx], values[request.idx] == max(values)))
        return out

    def loglikelihood_rolling(self, requests: list, disable_tqdm: bool = False) -> list:
        raise NotImplementedError("mdad-sim only answers multiple-choice tasks")

    def generate_until(self, requests: list, disable_tqdm: bool = False) -> list:
        raise NotImplementedError("mdad-sim only answers multiple-choice tasks")


def main() -> None:
    """The real lm-eval command line, with `mdad-sim` registered.

    Its task index holds only the ``--include_path`` tasks unless
    ``MDAD_SIM_BUILTIN_TASKS=1``: indexing lm-eval's 14,000 built-in task YAMLs costs
    10 s a process, and the tests run some thirty processes that never use them."""
    import os
    import sys

    import lm_eval.tasks
    from lm_eval.__main__ import cli_evaluate

    if os.environ.get("MDAD_SIM_BUILTIN_TASKS") != "1":
        class IncludedTasksOnly(lm_eval.tasks.TaskManager):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                kwargs.setdefault("include_defaults", False)
                # the tests check this line: a later lm-eval that bound the class
                # elsewhere would index its built-in tasks again, 10 s a process
                print(f"{NAME}: {BUILTIN_TASKS_LEFT_OUT}", file=sys.stderr)
                super().__init__(*args, **kwargs)

        lm_eval.tasks.TaskManager = IncludedTasksOnly  # the CLI imports it when it runs
    cli_evaluate()


if __name__ == "__main__":
    main()
