"""A/B preference with "no preference" between the two: which of two versions of one sentence sounds better, or
neither; the order is drawn for each trial."""
from pipeline.listen.kinds import KINDS, Kind

KINDS.register(Kind(name="ab-np", summary="the same, or no preference", title="Which recording sounds better?",
                    scale=((1, "The first"), (0, "No preference"), (2, "The second")), pair=True, good=1))
