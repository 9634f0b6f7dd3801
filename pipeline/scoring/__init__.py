"""How an utterance is scored: normalized (normalize), aligned (align), counted, flagged and rated (evaluate, flags),
into typed records (utterances), written as CSVs and sclite's files (files, sclite), pooled into corpus rates with
their intervals (rates), and the paired tests every comparison of scored utterances uses (paired)."""
