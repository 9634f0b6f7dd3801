"""Every artifact a stage reads or makes, by name: where it lives (derived from the config alone, so that stages
agree without talking), what identifies its content, and what a reading stage receives."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from pipeline.config import paths
from pipeline.asr.transcriber import Transcript
from pipeline.io.speech import Speech
from pipeline.lm.sentences import Sentence
from pipeline.measures.assessor import Measured
from pipeline.config.run import Config
from pipeline.core import records, store, tables
from pipeline.core.names import inside
from pipeline.io import inputs, manifests
from pipeline.measures.base import Assessment, described
from pipeline import statistics
from pipeline.scoring import files as scored
from pipeline.scoring.utterances import Results


@dataclass(frozen=True)
class Artifact:
    doc: str
    files: Callable[[Config], list[Path]]  # what it is on disk; the first file is its main one
    load: Callable[[Config], Any] = lambda cfg: None  # what a reading stage receives
    identity: Callable[[Config], Any] | None = None  # what its content is; by default the files' sha256

    def path(self, cfg: Config) -> Path:
        return self.files(cfg)[0]

    def exists(self, cfg: Config) -> bool:
        return self.content(cfg) is not None

    def content(self, cfg: Config) -> Any:
        """None when the artifact is not there (its main file is missing, or it is not usable)."""
        if self.identity:
            return self.identity(cfg)
        files = self.files(cfg)
        return [store.sha256_or_none(f) for f in files] if files[0].exists() else None


def _run(name: str) -> Callable[[Config], list[Path]]:
    return lambda cfg: [paths.run_dir(cfg) / name]


def _rows(name: str, record: type) -> Callable[[Config], list]:
    """The typed rows of an artifact's main file, whose name is spelled once: in the artifact's files."""
    return lambda cfg: records.read_csv(ARTIFACTS[name].path(cfg), record)


def _speech_files(cfg: Config) -> list[Path]:
    """The table and every wav it names: a recording replaced or damaged after the run is heard again."""
    table = paths.run_dir(cfg) / "synthesis.csv"
    if not table.exists():
        return [table]
    return [table, *dict.fromkeys(Path(s.audio_path) for s in records.read_csv(table, Speech)
                                  if s.audio_path)]


def _references(cfg: Config) -> list:
    """Each speaker reference and natural recording the speech rows (or the config, per voice) name, with its
    sha256: one replaced after the run is measured against again, and nothing else is done again."""
    table = paths.run_dir(cfg) / "synthesis.csv"
    rows = records.read_csv(table, Speech) if table.exists() else []
    named = [p for s in rows for p in (s.speaker_reference, s.natural) if p]
    named += [pair.partition("=")[2] for pair in cfg.assess.speaker_references]
    return [[p, store.sha256_or_none(p)] for p in dict.fromkeys(named)]


def _lm_files(cfg: Config) -> list[Path]:
    return [paths.lm_dir(cfg) / "ckpt.pt", paths.lm_dir(cfg) / "train.json", paths.lm_dir(cfg) / "loss_log.csv"]


def _lm_identity(cfg: Config) -> str | None:
    from pipeline.lm.checkpoint import finished

    return finished(paths.lm_dir(cfg)).get("ckpt_sha256")


def _tokens(cfg: Config):
    from pipeline.lm import corpus

    return corpus.load_bin(paths.data_dir(cfg) / "train.bin"), corpus.load_bin(paths.data_dir(cfg) / "val.bin")


def _attention_files(cfg: Config) -> list[Path]:
    """The index and every npz it names: a weights file damaged since is made again. An index that is not of the
    shape the attention stage writes names nothing; its own hash then tells the runner it was changed."""
    index = paths.run_dir(cfg) / "attention" / "index.json"
    data = store.read_json_or_empty(index) if index.exists() else {}
    named = data.get("sentences") if isinstance(data, dict) else None
    entries = named.values() if isinstance(named, dict) else ()
    named_files = [e["file"] for e in entries if isinstance(e, dict) and isinstance(e.get("file"), str)]
    return [index, *(inside(index.parent, f) for f in named_files if "/" not in f and f not in ("", ".", ".."))]


def _attention(cfg: Config) -> dict:
    """{sentence id: (tokens, weights (layers, heads, T, T))}."""
    import numpy as np

    index = paths.run_dir(cfg) / "attention" / "index.json"
    out = {}
    for sentence_id, entry in store.read_json(index)["sentences"].items():
        with np.load(index.parent / entry["file"]) as z:
            out[sentence_id] = ([str(t) for t in z["tokens"]], z["weights"])
    return out


def _measures(cfg: Config) -> Assessment:
    import numpy as np

    table, vectors, declared = ARTIFACTS["measures"].files(cfg)
    with np.load(vectors) as z:
        embeddings = dict(zip((str(k) for k in z["keys"]), z["vectors"]))
    return Assessment(records.read_csv(table, Measured), embeddings, described(store.read_json(declared)))


def _recordings(cfg: Config) -> manifests.Manifest:
    return manifests.scan(cfg.audio_manifest, cfg.manifest_format, cfg.audio_dir)


def _in_run(files: Callable[[], tuple[tables.File, ...]]) -> Callable[[Config], list[Path]]:
    return lambda cfg: [paths.run_dir(cfg) / name for name in tables.names(files())]


def _user_file(path_of: Callable[[Config], str]) -> Callable[[Config], list[Path]]:
    return lambda cfg: [Path(path_of(cfg)).expanduser()]


ARTIFACTS: dict[str, Artifact] = {
    "corpus": Artifact("the training text: the bundled plays, a text file, or PA6a token files",
                       lambda cfg: [paths.data_dir(cfg)], identity=paths.corpus_identity),
    "tokens": Artifact("the corpus as uint16 GPT-2 ids, split for training and validation",
                       lambda cfg: [paths.data_dir(cfg) / n for n in ("meta.json", "train.bin", "val.bin")],
                       load=_tokens),
    "lm": Artifact("the trained GPT: best checkpoint, its summary and loss log", _lm_files,
                   load=lambda cfg: paths.lm_dir(cfg), identity=_lm_identity),
    "sentence_file": Artifact("the user's sentences, one per line", _user_file(lambda cfg: cfg.sentences),
                              load=lambda cfg: inputs.sentences(cfg.sentences)),
    "audio_manifest": Artifact("the user's recordings: id, audio, reference, in any format manifests/ reads",
                               _user_file(lambda cfg: cfg.audio_manifest), load=_recordings,
                               identity=lambda cfg: store.key_of([asdict(r) for r in _recordings(cfg).recordings])),
    "sentences": Artifact("the reference sentences with their perplexity",
                          lambda cfg: [paths.run_dir(cfg) / n for n in ("sentences.csv", "sampled_sentences.json",
                                                                        "reference_perplexity.csv")],
                          load=_rows("sentences", Sentence)),
    "speech": Artifact("a wav per sentence × voice × condition, and the table naming them", _speech_files,
                       load=_rows("speech", Speech)),
    "references": Artifact("the speaker references and natural recordings the speech rows name",
                           lambda cfg: [paths.run_dir(cfg) / "synthesis.csv"], identity=_references),
    "measures": Artifact("each speech row's measures (naturalness, speaker similarity), their columns' meanings, and "
                         "voice embeddings", lambda cfg: [paths.run_dir(cfg) / n for n in
                                                          ("measures.csv", "embeddings.npz", "measures.json")],
                         load=_measures),
    "transcripts": Artifact("a hypothesis per speech row × engine", _run("transcripts.csv"),
                            load=_rows("transcripts", Transcript)),
    "scores": Artifact("per-utterance alignments, error events, confusions, group figures, trn files",
                       _in_run(lambda: scored.FILES),
                       load=lambda cfg: tables.load(scored.FILES, paths.run_dir(cfg), Results)),
    "statistics": Artifact("paired comparisons, normalizer sensitivity, difficulty bins, word attribution, "
                           "engine agreement, breakdown SNR", _in_run(statistics.files),
                           load=lambda cfg: tables.load(statistics.files(), paths.run_dir(cfg),
                                                        statistics.Statistics)),
    "attention": Artifact("each sentence's attention weights per layer and head", _attention_files,
                          load=_attention),
    "report": Artifact("report.html", _run("report.html")),
}


def path(name: str, cfg: Config) -> Path:
    return ARTIFACTS[name].path(cfg)


def sentence_tables(cfg: Config) -> tuple[Path, Path]:
    """Where a source writes its sentences and, with an LM, the reference sentences' perplexity."""
    table, _, yardstick = files("sentences", cfg)
    return table, yardstick


def files(name: str, cfg: Config) -> list[Path]:
    """Every file of an artifact, its main one first, in the order its declaration lists them."""
    return ARTIFACTS[name].files(cfg)
