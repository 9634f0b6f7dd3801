"""SMOS: how similar a clip's voice is to its speaker reference (the voice-cloning prompt), played beside it."""
from pipeline.listen.kinds import KINDS, Kind

KINDS.register(Kind(
    name="smos", summary="each clip's voice against its speaker reference, 1-5",
    title="How similar is the voice of the second recording to the voice of the first?",
    scale=((5, "Very similar"), (4, "Similar"), (3, "Somewhat similar"), (2, "Dissimilar"), (1, "Very dissimilar")),
    pair=False, reference=True, good=5, bad=1))
