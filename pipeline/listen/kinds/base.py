"""A listening-test kind: what its trials play, the answer its page asks for, how an answer is checked, oriented
and analysed. Each kind is one file of this package (mos.py, smos.py, cmos.py, ab.py, ab_np.py) or a plugin's
module named by the entry point group `speech_eval.listening`, registering one instance; nothing outside the kind
branches on which kind it is, as openai/whisper's decoding strategies carry their own behaviour.

The methods in three groups, each called by one module:
- making the test (create.py, through its `Maker`): `sentences`, `test_trials`, `own_clips`, `gold_trials`,
  `gold_answer`, `trap`, `trap_trial`, `training_trial`;
- the listener's page (app.py): `page`, `refused`, `stored`, `plays`, `each_sentence_once` (assign.py);
- reading the votes (analysis.py, compare-runs): `oriented`, `said`, `answered_as_asked`, `gold_missed`
  (`gold_tolerance`), `varies`, `analyse`, `human`, `metric`; and its own lines of `listen results`' summary
  (results.py): `lines`. The report shows a kind's own tables (`Analysis.tables`) as they are."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pipeline.gate.release import Human
    from pipeline.listen.analysis import Analysis, Vote
    from pipeline.listen.create import Clip, Maker


@dataclass(frozen=True, kw_only=True)
class Kind:
    name: str  # as `listen create --kind` takes it
    summary: str  # what it measures, for the help
    title: str  # what the listener is asked, on every trial
    scale: tuple[tuple[int, str], ...]  # (value, label) of every answer, in the order they are shown
    # the answers gold trials expect: `good` for a clean clip, `bad` for heavy noise (as each kind makes its golds)
    good: int | None = None
    bad: int | None = None

    widget: ClassVar[str] = "scale"  # the answer listen.js shows: a button for each value of the scale
    two_clips: ClassVar[bool] = False  # a trial plays two recordings: a trap's plain side breaks where it does
    gold_tolerance: ClassVar[int] = 1  # how far from a gold trial's answer a careful listener may be
    varies: ClassVar[bool] = True  # P.808's rule: a listener whose test answers hardly vary did not listen
    plays: ClassVar[int] = 0  # times a listener may play each recording of a trial (0: any), unless the test says
    agreement: ClassVar[str] = "interval"  # what the listeners' Krippendorff's alpha is computed on
    # a listener's test trials are each of another sentence: an answer would come from memory the second time
    each_sentence_once: ClassVar[bool] = False

    @property
    def instructions(self) -> str:
        """What the listener's page says first: what to do, and what the answers mean."""
        labels = ", ".join(label for _, label in self.page(["", ""] if self.two_clips else [""])["scale"])
        return (f"Listen to each recording to its end; then answer the question shown, from {labels}. The number "
                "keys choose an answer too.")

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(v for v, _ in self.scale)

    def label(self, value: int) -> str:
        return dict(self.scale)[value]

    def said(self, value: int | str) -> str:
        """An answer as the listener saw it: '2 (Poor)'."""
        return f"{value} ({self.label(value)})" if value in self.values else str(value)

    @property
    def metric(self) -> str:
        """The name compare-runs gates the listeners' answers under."""
        return f"listeners_{self.name.split('-')[0]}"

    # making the test

    def sentences(self, by: dict[str, dict[str, Clip]]) -> list[str]:
        """The sentences a test of these systems' clips ({system: {sentence: clip}}) holds."""
        return sorted(set().union(*(set(c) for c in by.values())))

    def test_trials(self, maker: Maker) -> None:
        raise NotImplementedError

    def own_clips(self, maker: Maker) -> list[Clip]:
        """The clips the training, trapping and made gold trials are cut from: the systems' own, each from another
        sentence where there are enough, so that they sound like the test and none fills a session."""
        systems, by = maker.systems, maker.by
        return [by[systems[k % len(systems)]][s] for k, s in enumerate(maker.rng.sample(maker.shared,
                                                                                       len(maker.shared)))
                if s in by[systems[k % len(systems)]]] or [next(iter(by[systems[0]].values()))]

    def gold_trials(self, maker: Maker) -> list[str]:
        """Gold trials with their expected answers; returns what could not be made, and what acceptance rests
        on then."""
        raise NotImplementedError

    def gold_answer(self, text: str) -> int:
        """A gold trial's answer as the user's --gold CSV writes it; ValueError if it is none of this kind's."""
        value = int(text)
        if value not in self.values:
            raise ValueError(f"{value} is not an answer of {self.name}")
        return value

    def trap(self, rng: random.Random, language: str) -> tuple[int | str, str]:
        """A trapping trial's answer, and how the tool's voice asks for it (in English) in a test of runs in
        `language` ("" for runs in several)."""
        answer = rng.choice([v for v in self.values if v != 0] or list(self.values))
        return answer, f"Please select the answer {answer}."

    def trap_trial(self, maker: Maker, clip: Clip, trapped: str, plain: str | None, answer: int | str) -> None:
        """The trial of a trapped clip (its id), asking for `answer`; `plain`: the same clip broken where the trap
        breaks, made only for a kind whose trials play two recordings."""
        if plain is None:
            maker.trial("trap", trapped, None, clip.sentence_id, answer)
        else:
            maker.trial("trap", plain, trapped, clip.sentence_id, answer, swapped=False)

    def training_trial(self, maker: Maker, clip: Clip, snr: float | None) -> None:
        """A training trial: the clip at `snr` (None: clean), beside the clean clip for a kind of two recordings."""
        clean = maker.put(maker.variant(clip, "training", None)) if self.two_clips else None
        noisy = maker.put(maker.variant(clip, "training", snr))
        maker.trial("training", clean or noisy, noisy if clean else None, clip.sentence_id, swapped=False)

    # the listener's page

    def page(self, clips: list[str]) -> dict:
        """What listen.js needs to show a trial of these clips (in the order they play) and take its answer."""
        return {"title": self.title, "widget": self.widget,
                "names": ["First", "Second"] if len(clips) == 2 else ["Recording"],
                "scale": [[v, f"{v} {label}"] for v, label in self.scale]}

    @property
    def expects(self) -> str:
        """What an answer is, for the listener's page."""
        return f"value one of {list(self.values)}"

    def refused(self, value: object) -> str | None:
        """Why an answer cannot be stored, for the listener's page; None when it can."""
        if type(value) is not int or value not in self.values:
            return f"expected {self.expects}, not {json.dumps(value)[:40]}"
        return None

    def stored(self, value) -> tuple[int | None, str | None]:
        """An answer `refused` let through as the votes table keeps it: (value, text)."""
        return value, None

    def answered_as_asked(self, vote: Vote) -> bool:
        """Whether a trapping trial was answered as its recording asked."""
        return vote.raw == vote.expected

    @property
    def gold_rule(self) -> str:
        """What a gold trial missed is, for the reason a listener is left out."""
        return f"more than {self.gold_tolerance} from their answer"

    def gold_missed(self, vote: Vote) -> bool:
        """Whether a gold trial's answer is further from its answer than a careful listener's would be."""
        return abs(vote.value - vote.expected) > self.gold_tolerance

    # reading the votes

    def oriented(self, value: int, swapped: bool) -> int:
        """An answer as it reads for the trial's clips in the order the test made them, whatever order the listener
        heard them in."""
        return value

    def analyse(self, result: Analysis, kept: list[Vote], clips: dict, n_boot: int, seed: int) -> None:
        """Fill `result` with what the accepted listeners' test votes say."""
        raise NotImplementedError

    def human(self, test: str, kept: list[Vote], origin, clips: dict) -> Human | None:
        """What the accepted listeners said of the runs' audio, for compare-runs: `origin(clip id)` is where a
        rated clip came from in the runs compared (run folder, voice, condition), or None."""
        raise NotImplementedError

    def lines(self, found: Analysis) -> list[str]:
        """The kind's own lines of `listen results`' summary, beside what every kind's analysis prints."""
        return []
