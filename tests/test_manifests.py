"""The field's manifest formats (pipeline/io/manifests/): each read from files written here, as its toolkit writes
them, and scored as the TSV of the same recordings is; their malformed lines; several systems in one manifest;
conditions on recordings; the flags a manifest run refuses; seed-tts-eval's normalizer."""
import json
import shutil
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from pipeline.scoring.utterances import Pair
from pipeline.errors import ConfigError, InputError
from pipeline.io import manifests
from tests.helpers import ROOT, TINY, cli

IDS = ["r0", "r1", "r2", "r3"]
TEXTS = ["Now is the winter of our discontent made glorious summer by this sun of York.",
         "To be, or not to be, that is the question.",
         "My lord, I will go with you to the king tomorrow.",
         "Mr. Smith paid 12 dollars."]


def recordings(folder: Path, speech=None) -> list[Path]:
    """Four wavs in folder/wavs: the session's real speech where given, else short tones (for the readers)."""
    (folder / "wavs").mkdir(parents=True, exist_ok=True)
    out = []
    for i, uid in enumerate(IDS):
        samples = speech[i % len(speech)] if speech else 0.1 * np.sin(np.arange(8000) * (i + 1) / 20)
        sf.write(folder / "wavs" / f"{uid}.wav", samples, 16000)
        out.append(folder / "wavs" / f"{uid}.wav")
    return out


def write_formats(d: Path) -> dict[str, Path]:
    """The same four recordings in every format that reads a folder of wavs (Common Voice's clips are mp3: its own
    test); each path is what a user passes to --audio-manifest."""
    (d / "m.tsv").write_text("id\taudio\treference\n" + "".join(f"{u}\twavs/{u}.wav\t{t}\n" for u, t in zip(IDS, TEXTS)))
    (d / "meta.lst").write_text("".join(f"{u}|a prompt|prompts/{u}.wav|{t}\n" for u, t in zip(IDS, TEXTS)))
    (d / "train.jsonl").write_text("".join(json.dumps({"audio_filepath": f"wavs/{u}.wav", "text": t, "duration": 2.9})
                                           + "\n" for u, t in zip(IDS, TEXTS)))
    kaldi = d / "kaldi"
    kaldi.mkdir()
    (kaldi / "wav.scp").write_text("".join(f"{u} ../wavs/{u}.wav\n" for u in IDS))
    (kaldi / "text").write_text("".join(f"{u} {t}\n" for u, t in zip(IDS, TEXTS)))
    lj = d / "LJSpeech"
    (lj / "wavs").mkdir(parents=True)
    for u in IDS:
        (lj / "wavs" / f"{u}.wav").write_bytes((d / "wavs" / f"{u}.wav").read_bytes())
    # LJSpeech's written transcription, then the normalized one that was said
    (lj / "metadata.csv").write_text("".join(f"{u}|{t.replace('Mr.', 'Mr')}|{t}\n" for u, t in zip(IDS, TEXTS)))
    hf = d / "hf"
    (hf / "data").mkdir(parents=True)
    for u in IDS:
        (hf / "data" / f"{u}.wav").write_bytes((d / "wavs" / f"{u}.wav").read_bytes())
    (hf / "metadata.csv").write_text("file_name,transcription\n" +
                                     "".join(f'data/{u}.wav,"{t}"\n' for u, t in zip(IDS, TEXTS)))
    return {"csv": d / "m.tsv", "seed-tts": d / "meta.lst", "nemo": d / "train.jsonl", "kaldi": kaldi,
            "ljspeech": lj, "audiofolder": hf}


def test_every_format_is_detected_and_reads_the_same_recordings(tmp_path):
    recordings(tmp_path)
    paths = write_formats(tmp_path)
    for name, path in paths.items():
        assert manifests.detect(path).name == name, name
        rows = manifests.read(path, audio_dir=str(tmp_path / "wavs") if name == "seed-tts" else "")
        assert [r.id for r in rows] == IDS and [r.reference for r in rows] == TEXTS, name
        for r in rows:  # relative paths from the manifest's folder, each naming the same audio
            assert store.sha256_file(r.audio_path) == store.sha256_file(tmp_path / "wavs" / f"{r.id}.wav"), name
    assert manifests.detect(paths["kaldi"] / "wav.scp").name == "kaldi"
    assert manifests.detect(paths["audiofolder"] / "metadata.csv").name == "audiofolder"
    assert manifests.read(paths["nemo"], format="nemo")[0].duration is None  # a whole file's length never clips it


def test_meta_lst_prompts_are_relative_to_its_folder_and_each_field_form_reads(tmp_path):
    (tmp_path / "set").mkdir()
    meta = tmp_path / "set" / "meta.lst"
    meta.write_text("a|prompt words|prompt-wavs/p1.wav|Say this.\n"
                    "b|Say that.\n"
                    "c.wav|Say those.|prompt-wavs/p3.wav\n"
                    "d|prompt|prompt-wavs/p4.wav|Say these.|gt/d.wav\n")
    rows = manifests.read(meta, audio_dir=f"sysA={tmp_path},sysB={tmp_path / 'set'}")
    assert [(r.system, r.id, r.reference) for r in rows][:4] == [
        ("sysA", "a", "Say this."), ("sysB", "a", "Say this."), ("sysA", "b", "Say that."), ("sysB", "b", "Say that.")]
    by = {(r.system, r.id): r for r in rows}
    assert by["sysA", "a"].speaker_reference == str(tmp_path / "set" / "prompt-wavs" / "p1.wav")
    assert by["sysB", "c"].audio_path == str(tmp_path / "set" / "c.wav")  # the 3-field form's utt.wav
    assert by["sysA", "d"].reference == "Say these." and by["sysA", "b"].speaker_reference == ""
    with pytest.raises(ConfigError, match="--audio-dir"):
        manifests.read(meta)


MALFORMED = {
    "seed-tts": ("meta.lst", "a|one|two|three|four|five\n", "line 1", "fields"),
    "nemo": ("m.jsonl", '{"audio_filepath": "a.wav", "text": "hi"}\n{"audio_filepath": "b.wav" "text": "x"}\n',
             "line 2", "JSON"),
    "nemo-keys": ("n.jsonl", '{"audio": "a.wav", "text": "hi"}\n', "line 1", "audio_filepath"),
    "csv": ("m.csv", "id,audio,reference\na,a.wav,hi,extra\n", "line 2", "fields"),
    "ljspeech": ("lj/metadata.csv", "LJ1|one\nLJ2\n", "line 2", "id|transcription"),
    "audiofolder": ("hf/metadata.jsonl", '{"file_name": "a.wav", "transcription": "x"}\n{"file_name": "b.wav"}\n',
                    "line 2", "transcription"),
    "kaldi-text": ("k/text", "u1 hello\n", None, "needs text"),
    "kaldi-pipe": ("k/wav.scp", "u1 sox in.flac -t wav - |\n", "line 1", "piped command"),
    "kaldi-ark": ("k/wav.scp", "u1 /data/feats.ark:123\n", "line 1", "archive"),
    "kaldi-segments": ("k/segments", "u1 rec 2.0 1.0\n", "line 1", "ends"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_line_names_the_file_the_line_and_what_was_expected(tmp_path, case):
    name, content, line, expected = MALFORMED[case]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    if name.startswith("lj/"):
        (path.parent / "wavs").mkdir()
    if name.startswith("k/"):
        for other, body in (("wav.scp", "rec a.wav\nu1 a.wav\n"), ("text", "u1 hello\n")):
            if not (path.parent / other).exists() and case != "kaldi-text":
                (path.parent / other).write_text(body)
        if case == "kaldi-text":
            (path.parent / "wav.scp").touch()
            (path.parent / "text").unlink()
    with pytest.raises(InputError) as e:
        manifests.read(path.parent if name.startswith(("k/", "hf/", "lj/")) else path,
                       audio_dir=str(tmp_path) if case == "seed-tts" else "")
    message = str(e.value)
    assert expected in message, message
    assert (f"{line}:" in message or f"{line} " in message) if line else True, message


@pytest.mark.slow
def test_kaldi_segments_cut_their_recordings(tmp_path, models_dir, piper_speech):
    texts, speech = piper_speech
    long = np.concatenate([speech[0], np.zeros(8000, np.float32), speech[1]])
    sf.write(tmp_path / "long.wav", long, 16000)
    split = (len(speech[0]) + 4000) / 16000
    d = tmp_path / "data"
    d.mkdir()
    (d / "wav.scp").write_text(f"rec1 {tmp_path / 'long.wav'}\nrec2 {tmp_path / 'long.wav'}\n")
    (d / "segments").write_text(f"u1 rec1 0 {split}\nu2 rec1 {split} -1\nu3 rec9 0 1\nu4 rec2 0 1\n")
    (d / "text").write_text(f"u1 {texts[0]}\nu2 {texts[1]}\nu3 a recording that is not there\n")
    proc = cli(tmp_path, "--audio-manifest", "data", *TINY, "--measures", "none", models=models_dir, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "2 line(s) or file(s) not used" in proc.stderr  # rec2's only segment, u4, has no transcript
    assert "wav.scp line 2 (rec2): a recording no utterance of text comes from" in proc.stderr
    assert "segments line 4 (u4): a segment whose utterance has no line in text" in proc.stderr
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "default" / "utterances.csv")}
    assert float(rows["u1"]["wer"]) <= 0.25 and float(rows["u2"]["wer"]) <= 0.25
    assert "question" not in rows["u1"]["hypothesis"] and "winter" not in rows["u2"]["hypothesis"]
    assert abs(float(rows["u1"]["audio_seconds"]) - split) < 0.01
    assert rows["u3"]["status"] == "error" and "rec9" in rows["u3"]["error"]


@pytest.mark.slow
def test_six_formats_give_the_same_hypotheses_and_wer(tmp_path, models_dir, piper_speech):
    """The same four recordings in every format: identical transcripts and scores, and a missing wav a row."""
    recordings(tmp_path, piper_speech[1])
    paths = write_formats(tmp_path)
    results = {}
    for name, path in paths.items():
        extra = ["--audio-dir", str(tmp_path / "wavs")] if name == "seed-tts" else []
        # through one cache: a transcript is keyed by its audio's sha256, so a format that read another file or
        # another clip of it would be heard anew, and its reference is scored by its own run
        cli(tmp_path, "--audio-manifest", str(path), *extra, *TINY, "--measures", "none", "--run", name,
            models=models_dir, cache=tmp_path / "cache")
        rows = store.read_csv(tmp_path / "results" / name / "utterances.csv")
        results[name] = [(r["sentence_id"], r["hypothesis"], r["wer"], r["errors"]) for r in rows]
        assert not (tmp_path / "results" / name / "attention").exists()  # no LM: no attention stage
    assert all(v == results["csv"] for v in results.values()), results
    (tmp_path / "wavs" / "r2.wav").unlink()
    proc = cli(tmp_path, "--audio-manifest", str(paths["seed-tts"]), "--audio-dir", str(tmp_path / "wavs"), *TINY,
               "--measures", "none", "--run", "missing", models=models_dir, check=False)
    assert proc.returncode == 1
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "missing" / "utterances.csv")}
    assert rows["r2"]["status"] == "error" and "no such audio file" in rows["r2"]["error"]  # a row, not dropped
    summary = store.read_csv(tmp_path / "results" / "missing" / "summary.csv")[0]
    assert summary["n_excluded"] == "1"


@pytest.mark.slow
def test_two_systems_in_one_manifest_are_compared_and_conditions_apply_to_recordings(tmp_path, models_dir,
                                                                                      piper_speech):
    texts, speech = piper_speech
    for system, order in (("good", [0, 1, 2]), ("swapped", [1, 2, 0])):
        (tmp_path / system).mkdir()
        for i, j in enumerate(order):
            sf.write(tmp_path / system / f"s{i}.wav", speech[j], 16000)
    (tmp_path / "m.csv").write_text("id,system,audio,reference\n" + "".join(
        f'{u},{s},{s}/{u}.wav,"{t}"\n' for s in ("good", "swapped") for u, t in zip(["s0", "s1", "s2"], texts)))
    proc = cli(tmp_path, "--audio-manifest", "m.csv", *TINY, "--measures", "none", "--conditions",
               "clean,noise:snr=10", models=models_dir)
    run = tmp_path / "results" / "default"
    rows = store.read_csv(run / "utterances.csv")
    assert {(r["voice"], r["condition"]) for r in rows} == {(s, c) for s in ("good", "swapped")
                                                            for c in ("clean", "noise:snr=10")}
    assert [r["sentence_id"] for r in rows if r["voice"] == "good" and r["condition"] == "clean"] == ["s0", "s1", "s2"]
    noisy = [r for r in rows if r["condition"] == "noise:snr=10"]
    assert all((run / r["audio_path"]).is_file() and "noise:snr=10" in r["audio_path"] for r in noisy)
    clean = {(r["voice"], r["sentence_id"]): r["audio_path"] for r in rows if r["condition"] == "clean"}
    assert clean["good", "s0"] == "../../good/s0.wav"  # heard as given, from the user's own file
    pairs = store.read_csv(run / "comparisons.csv")
    voices = [p for p in pairs if {p["a"].split(" | ")[0], p["b"].split(" | ")[0]} == {"good", "swapped"}
              or ("good" in p["a"] and "swapped" in p["b"])]
    assert voices and "swapped" in proc.stdout and "good" in proc.stdout
    swapped = [float(s["micro_wer"]) for s in store.read_csv(run / "summary.csv")
               if s["voice"] == "swapped" and s["condition"] == "clean"]
    assert swapped and swapped[0] > 0.5  # each sentence spoken as another: mostly wrong


@pytest.mark.parametrize("flags, message", [
    ({"tts.voices": "flite:slt"}, "--voices"),
    ({"sentences": "s.txt"}, "--sentences"),
])
def test_flags_a_manifest_run_cannot_use_are_refused(tmp_path, flags, message, monkeypatch):
    from pipeline.config import run as config

    monkeypatch.chdir(tmp_path)
    recordings(tmp_path)
    write_formats(tmp_path)
    (tmp_path / "s.txt").write_text("one line\n")
    with pytest.raises(ConfigError, match=message):
        config.load(overrides={"audio_manifest": "m.tsv", **flags})
    with pytest.raises(ConfigError, match="--audio-dir"):
        config.load(overrides={"audio_dir": str(tmp_path)})


def seed_tts_eval_reference(text: str) -> list[str]:
    """seed-tts-eval's run_wer.py process_one for English, then jiwer's default transform's words."""
    import re

    from zhon.hanzi import punctuation

    for x in punctuation + string.punctuation:
        if x == "'":
            continue
        text = text.replace(x, "")
    text = text.replace("  ", " ").lower()
    return [w for w in re.sub(r"\s\s+", " ", text).strip().split(" ") if w]


HARD = ["“Curly quotes,” she said — ‘and’ em dashes…", "A well-known, self-evident fact: 1,000.50 dollars!",
        "ＦＵＬＬ－ＷＩＤＴＨ（ｐｕｎｃｔｕａｔｉｏｎ）。", "runs  of   spaces\tand\ttabs", "It's the king's o'er-proud 'tis",
        "ends with a dash -", "   ", "don’t stop", "x\u00a0y  z"]


@pytest.mark.parametrize("text", HARD)
def test_the_seed_tts_eval_normalizer_is_theirs(text):
    from pipeline.scoring import normalize

    ours = normalize.get("seed-tts-eval")(text).split()
    theirs = seed_tts_eval_reference(text)
    assert len(ours) == len(theirs)
    assert ours == [w.replace("\t", "\u2423").replace("\u00a0", "\u2423") for w in theirs]


def test_the_seed_tts_eval_macro_wer_is_the_mean_their_script_prints(tmp_path):
    import jiwer

    from pipeline.scoring import config, evaluate

    pairs = [("Hello, World!", "hello word"), ("It's a well-known fact.", "its a well known fact"),
             ("“Quoted” text — here", "quoted text here")]
    rows = [Pair(sentence_id=f"u{i}", asr="x", condition="clean", reference=r, hypothesis=h)
            for i, (r, h) in enumerate(pairs)]
    results = evaluate.evaluate(rows, config.ScoreConfig(normalize="seed-tts-eval", bootstrap=0))
    theirs = np.mean([jiwer.wer(" ".join(seed_tts_eval_reference(r)), " ".join(seed_tts_eval_reference(h)))
                      for r, h in pairs])
    assert results.summary[0].macro_wer == pytest.approx(theirs, abs=5e-5)


@pytest.mark.slow
def test_a_plugin_voice_installed_with_pip_runs_end_to_end_and_a_broken_one_is_named(tmp_path, models_dir):
    site, package = tmp_path / "site", tmp_path / "speech-eval-mytts"
    shutil.copytree(ROOT / "examples" / "speech-eval-mytts", package)  # pip builds in place: not in the checkout
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(site), str(package)], check=True)
    broken = site / "broken_voice-1.0.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-voice\nVersion: 1.0\n")
    (broken / "entry_points.txt").write_text("[speech_eval.voices]\nbroken = broken_voice_module\n")
    (site / "broken_voice_module.py").write_text("import a_module_that_is_not_installed\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    (tmp_path / "s.txt").write_text("To be, or not to be, that is the question.\nAll the world's a stage.\n")
    cli(tmp_path, "--sentences", "s.txt", "--voices", "mytts:speaker1,mytts:slow,piper:joe", *TINY, "--measures",
        "none", models=models_dir, env=env)
    rows = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    assert {r["voice"] for r in rows} == {"mytts:speaker1", "mytts:slow", "piper:joe"}
    assert all(r["status"] == "ok" and float(r["wer"]) <= 0.5 for r in rows), rows
    heard = {(r["voice"], r["sentence_id"]): r for r in rows}
    for sid in ("l0001", "l0002"):  # speaker1 is joe's model as the built-in voice runs it: the same audio
        assert heard["mytts:speaker1", sid]["audio_sha256"] == heard["piper:joe", sid]["audio_sha256"]
    assert float(heard["mytts:slow", "l0001"]["audio_seconds"]) > 1.1 * float(heard["piper:joe", "l0001"]["audio_seconds"])
    manifest = json.loads((tmp_path / "results" / "default" / "manifest.json").read_text())
    assert manifest["models"]["mytts:speaker1"]["files"]  # its model's hashes join the keys
    proc = cli(tmp_path, "--sentences", "s.txt", "--voices", "broken:x", *TINY, models=models_dir, env=env,
               check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "broken" in proc.stderr and "a_module_that_is_not_installed" in proc.stderr and "broken-voice" in proc.stderr


def test_what_a_manifest_holds_that_no_recording_uses_is_counted_and_named(tmp_path):
    recordings(tmp_path)
    kaldi = write_formats(tmp_path)["kaldi"]
    (kaldi / "wav.scp").write_text((kaldi / "wav.scp").read_text() + "extra ../wavs/r0.wav\n")
    found = manifests.scan(kaldi)
    assert [r.id for r in found.recordings] == IDS
    assert [str(u) for u in found.unused] == [f"{kaldi / 'wav.scp'} line 5 (extra): a recording no utterance of "
                                              "text comes from: it has no transcript"]
    (tmp_path / "wavs" / "stray.wav").write_bytes((tmp_path / "wavs" / "r0.wav").read_bytes())
    found = manifests.scan(tmp_path / "meta.lst", audio_dir=str(tmp_path / "wavs"))
    assert [u.what for u in found.unused] == ["stray.wav"] and "no line of meta.lst names" in found.unused[0].why


def test_a_near_miss_says_what_the_format_lacks(tmp_path):
    recordings(tmp_path)
    hf = write_formats(tmp_path)["audiofolder"]
    (hf / "metadata.csv").write_text((hf / "metadata.csv").read_text().replace("file_name", "filename", 1))
    with pytest.raises(InputError) as e:
        manifests.read(hf)
    assert "has no file_name column" in str(e.value) and "rename 'filename' to file_name" in str(e.value)
    (tmp_path / "kdir").mkdir()
    (tmp_path / "kdir" / "text").write_text("u1 hello\n")
    with pytest.raises(InputError, match="has a text file but no wav.scp"):
        manifests.read(tmp_path / "kdir")


def test_one_folder_names_its_system_and_a_folder_matching_nothing_is_refused(tmp_path):
    recordings(tmp_path)
    meta = write_formats(tmp_path)["seed-tts"]
    assert {r.system for r in manifests.read(meta, audio_dir=str(tmp_path / "wavs"))} == {"wavs"}
    assert {r.system for r in manifests.read(meta, audio_dir=f"v9={tmp_path / 'wavs'}")} == {"v9"}
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError) as e:
        manifests.audio_present(manifests.scan(meta, audio_dir=str(tmp_path / "empty")))
    assert "none of the 4 wavs" in str(e.value) and "r0.wav" in str(e.value)


def test_a_torn_wav_is_refused_naming_what_its_header_promised(tmp_path):
    from pipeline.io import audio

    recordings(tmp_path)
    whole = (tmp_path / "wavs" / "r0.wav").read_bytes()
    (tmp_path / "torn.wav").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(audio.BadAudio, match="torn: its header promises 16000 bytes of audio, the file holds"):
        audio.read(tmp_path / "torn.wav")
    streamed = bytearray(whole)  # a writer streaming to a pipe leaves the length unknown: read to the end
    at = streamed.index(b"data")
    streamed[at + 4:at + 8] = (0xFFFFFFFF).to_bytes(4, "little")
    (tmp_path / "streamed.wav").write_bytes(bytes(streamed))
    assert len(audio.read(tmp_path / "streamed.wav")[0]) == 8000


def test_the_default_normalizer_makes_nfc_and_nfd_one_text_and_none_keeps_them_apart():
    from pipeline.scoring import config, evaluate

    nfc, nfd = "caf\u00e9 au lait", "cafe\u0301 au lait"
    basic = evaluate.evaluate([Pair(sentence_id="a", reference=nfc, hypothesis=nfd)])
    assert basic.utterances[0].errors == 0
    none = evaluate.evaluate([Pair(sentence_id="a", reference=nfc, hypothesis=nfd)],
                             config.ScoreConfig(normalize="none"))
    assert none.utterances[0].errors == 1 and none.utterances[0].hypothesis_normalized == nfd


CV_HEADER = ("client_id\tpath\tsentence_id\tsentence\tsentence_domain\tup_votes\tdown_votes\tage\tgender\taccents\t"
             "variant\tlocale\tsegment\n")


def common_voice(folder: Path, speech, texts, locale: str) -> Path:
    """A Common Voice release's layout: the TSV, and its MP3 clips in clips/ beside it."""
    (folder / "clips").mkdir(parents=True)
    lines = []
    for i, (samples, text) in enumerate(zip(speech, texts)):
        name = f"common_voice_{locale}_{1000 + i}.mp3"
        sf.write(folder / "clips" / name, samples, 16000, format="MP3")
        lines.append(f"c{i % 2}\t{name}\ts{i}\t{text}\t\t2\t0\t\t\t\t\t{locale}\t\n")
    (folder / "validated.tsv").write_text(CV_HEADER + "".join(lines), encoding="utf-8")
    return folder / "validated.tsv"


@pytest.mark.slow
def test_a_common_voice_tsv_is_heard_from_its_clips_in_its_own_language_only(tmp_path, models_dir, piper_speech):
    texts, speech = piper_speech
    tsv = common_voice(tmp_path / "cv-corpus" / "en", speech, texts, "en")
    assert manifests.detect(tsv).name == "common-voice"
    rows = manifests.read(tsv)
    assert [r.id for r in rows] == [f"common_voice_en_{1000 + i}" for i in range(3)]  # the clip, not sentence_id
    assert {r.language for r in rows} == {"en"} and [r.reference for r in rows] == texts
    cli(tmp_path, "--audio-manifest", str(tsv), *TINY, "--measures", "none", models=models_dir)
    scored = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    assert all(r["status"] == "ok" for r in scored) and sum(int(r["errors"]) for r in scored) <= 4
    german = common_voice(tmp_path / "cv-corpus" / "de", speech[:1], ["Heute ist das Wetter schön."], "de")
    proc = cli(tmp_path, "--audio-manifest", str(german), *TINY, "--run", "de", models=models_dir, check=False)
    assert proc.returncode == 2 and "its rows are in de" in proc.stderr and "--language de" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_manifest_that_says_its_language_is_read_and_another_language_than_the_runs_is_refused(tmp_path):
    from pipeline.config import run as config

    recordings(tmp_path)
    (tmp_path / "zh.jsonl").write_text("".join(json.dumps({"audio_filepath": f"wavs/{u}.wav", "text": "今天天气很好",
                                                           "lang": "zh"}, ensure_ascii=False) + "\n" for u in IDS),
                                       encoding="utf-8")
    hf = tmp_path / "hf"
    (hf / "data").mkdir(parents=True)
    for u in IDS:
        shutil.copy(tmp_path / "wavs" / f"{u}.wav", hf / "data" / f"{u}.wav")
    (hf / "metadata.csv").write_text("file_name,transcription,language\n" +
                                     "".join(f"data/{u}.wav,Guten Tag,de-DE\n" for u in IDS))
    assert {r.language for r in manifests.read(tmp_path / "zh.jsonl")} == {"zh"}
    assert {r.language for r in manifests.read(hf)} == {"de-DE"}
    for path, lang in ((tmp_path / "zh.jsonl", "zh"), (hf, "de")):
        with pytest.raises(ConfigError, match=f"its rows are in .*--language {lang}"):
            config.load(overrides={"audio_manifest": str(path)})
        config.load(overrides={"audio_manifest": str(path), "asr.language": lang})  # its own language: no error
