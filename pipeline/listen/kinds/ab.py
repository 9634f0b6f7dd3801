"""A/B preference: which of two versions of one sentence sounds better; the order is drawn for each trial."""
from pipeline.listen.kinds import KINDS, Kind

KINDS.register(Kind(name="ab", summary="which of two versions is better", title="Which recording sounds better?",
                    scale=((1, "The first"), (2, "The second")), pair=True, good=1))
