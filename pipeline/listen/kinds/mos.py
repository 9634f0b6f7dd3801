"""ACR MOS (ITU-T P.808): each clip alone, rated on the absolute category scale."""
from pipeline.listen.kinds import KINDS, Kind

KINDS.register(Kind(
    name="mos", summary="each clip rated 1-5 (P.808's ACR)", title="How would you rate the quality of this speech?",
    scale=((5, "Excellent"), (4, "Good"), (3, "Fair"), (2, "Poor"), (1, "Bad")), pair=False, good=4, bad=1))
