"""CMOS (ITU-T P.808's comparison category rating, CCR): two versions of one sentence, the second rated against
the first from -3 to +3; which version comes first is drawn for each trial, and the sign put right when read."""
from pipeline.listen.kinds import KINDS, Kind

KINDS.register(Kind(
    name="cmos", summary="two versions of a sentence, -3 to +3 (P.808's CCR)",
    title="Compared with the first recording, the quality of the second is",
    scale=((3, "Much better"), (2, "Better"), (1, "Slightly better"), (0, "About the same"), (-1, "Slightly worse"),
           (-2, "Worse"), (-3, "Much worse")), pair=True, good=-3))
