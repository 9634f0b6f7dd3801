"""SMOS: how similar a clip's voice is to its speaker reference (the voice-cloning prompt), played beside it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.errors import InputError
from pipeline.listen.create import Maker, made, user_gold
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.mos import Rating


@dataclass(frozen=True, kw_only=True)
class Similarity(Rating):
    predicts: ClassVar[str] = "smos"
    two_clips: ClassVar[bool] = True  # the reference first, then the clip

    def test_trials(self, maker: Maker) -> None:
        for system in maker.systems:
            for sentence in maker.shared:
                clip = maker.by[system].get(sentence)
                ref = maker.references.get(clip.utterance) if clip else None
                if clip and ref is None:
                    raise InputError(f"an smos test plays each clip beside its speaker reference: {clip.run}'s "
                                     f"{clip.utterance_id} has none (give the runs speaker references)")
                if ref is not None:
                    maker.reference_ids[clip.utterance] = maker.put(ref)
        for (system, sentence), cid in maker.rated.items():
            maker.trial("test", maker.reference_ids[maker.by[system][sentence].utterance], cid, sentence, swapped=False)

    def gold_trials(self, maker: Maker) -> list[str]:
        """The reference against itself (the good answer) and against the same sentence in another voice (the
        bad); a test of this kind has speaker references, so both can always be made."""
        from pipeline.tts import base as tts

        if maker.options.gold:
            user_gold(maker)
            return []
        natural = maker.naturals[0]
        samples, sr = tts.load("espeak:en-us").synthesize(natural.reference_text or "This is another voice.")
        reference = maker.put(made("gold", natural, natural.samples))
        maker.trial("gold", reference, maker.put(maker.variant(natural, "gold", None)), natural.sentence_id,
                    self.good, swapped=False)
        maker.trial("gold", reference, maker.put(made("gold", natural, samples, sr)), natural.sentence_id, self.bad,
                    swapped=False)
        return []

    def page(self, clips: list[str]) -> dict:
        return {**super().page(clips), "names": ["Reference", "Recording"]}


KINDS.register(Similarity(
    name="smos", summary="each clip's voice against its speaker reference, 1-5",
    title="How similar is the voice of the second recording to the voice of the first?",
    scale=((5, "Very similar"), (4, "Similar"), (3, "Somewhat similar"), (2, "Dissimilar"), (1, "Very dissimilar")),
    good=5, bad=1))
