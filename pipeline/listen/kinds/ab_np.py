"""A/B preference with "no preference" between the two: which of two versions of one sentence sounds better, or
neither; the order is drawn for each trial."""
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.ab import FIRST, SECOND, Preference

KINDS.register(Preference(name="ab-np", summary="the same, or no preference", title="Which recording sounds better?",
                          scale=((FIRST, "The first"), (0, "No preference"), (SECOND, "The second")), good=FIRST))
