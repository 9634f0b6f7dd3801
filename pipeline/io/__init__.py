"""Data in and out: audio files, the acoustic conditions audio passes through, and the user's input files
(sentences, audio manifests, token files), read and checked before any work."""
