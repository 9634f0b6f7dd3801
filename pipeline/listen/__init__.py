"""Listening tests from a team's own listeners, in the browser: ratings (MOS, SMOS), comparisons (CMOS, A/B)
and typed transcriptions scored as an engine's output (the `transcribe` kind).

`create` makes a test from one or more runs (one SQLite file: the clips, the trials, the gold and trapping clips,
the listeners' invitations, their assignments, votes and play events); `app` serves it (Starlette on uvicorn);
`analysis` reads the votes back: each system's MOS with its CI, P.808's acceptance rules, CMOS, A/B and
Bradley-Terry, the listeners' agreement, and every automatic measure of the runs checked against the listeners;
`results` writes and prints it. `database` is the file, `assign` who rates what. A test kind is one file of
kinds/ (`KINDS`, which `listen create --kind` lists)."""
