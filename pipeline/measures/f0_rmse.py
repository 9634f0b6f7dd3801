"""Log-F0 error against a natural recording of the same sentence, on MCD's alignment (mcd.py: WORLD's DIO and
StoneMask F0 at a 5 ms frame, the fastdtw path over mel-cepstra), so both measures see the same frame pairs.

- `f0_rmse`: the root mean square of 1200 · log₂(F0 / natural F0), in cents, over the path's pairs voiced in both
  (a semitone is 100 cents); empty when no pair is voiced in both.
- `vuv_error`: the share of the path's pairs whose voicing differs (one voiced, the other not).

Lower is better for both. Papers' "F0 RMSE" is often in Hz, or over frames aligned otherwise: these values compare
with other runs of this tool on the same natural recordings."""
from __future__ import annotations

import numpy as np

from pipeline.measures import mcd
from pipeline.measures.base import MEASURES, NATURAL, Declaration, Scores

COLUMNS = ("f0_rmse", "vuv_error")


class F0Error:
    def __init__(self, source):
        mcd.packages()

    def score(self, audio: np.ndarray, natural: np.ndarray | None) -> Scores:
        why = mcd.unusable(audio, natural)
        if why:
            return Scores(dict.fromkeys(COLUMNS), (why,))
        a = mcd.aligned(audio, natural)
        theirs, mine = a.natural_f0[a.path[0]], a.f0[a.path[1]]
        both = (theirs > 0) & (mine > 0)
        vuv = round(float(np.mean((theirs > 0) != (mine > 0))), 4)
        if not both.any():
            return Scores({"f0_rmse": None, "vuv_error": vuv}, ("no frame pair voiced in both",))
        cents = 1200.0 * np.log2(mine[both] / theirs[both])
        return Scores({"f0_rmse": round(float(np.sqrt(np.mean(cents ** 2))), 2), "vuv_error": vuv})


MEASURES.register(Declaration(
    name="f0_rmse",
    columns={"f0_rmse": "RMS log-F0 error (cents) from the natural recording, over MCD's fastdtw path's frame pairs "
                        "voiced in both; empty without a natural recording",
             "vuv_error": "share of MCD's fastdtw path's frame pairs whose voicing differs from the natural "
                          "recording's"},
    source=lambda: mcd.source("f0_rmse"), load=F0Error, needs=(NATURAL,), rate=mcd.RATE, installed=mcd.installed,
    paper="WORLD (Morise et al., IEICE 2016) DIO and StoneMask F0, on pymcd 0.2.1's MCD-DTW alignment",
    better="lower",
    comparable="other runs of this tool on the same natural recordings (cents, on fastdtw's path; papers' F0 RMSE "
               "is often in Hz)",
    predicts=""))
