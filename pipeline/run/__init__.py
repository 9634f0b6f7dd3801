"""The run: the stage declaration (stage.py), the artifact table every stage reads and writes through
(artifacts.py), and the runner that orders the stages it is handed, knows which are up to date, and keeps the
run's lock and manifest (runner.py). It sits above every library folder and below pipeline/stages/."""
