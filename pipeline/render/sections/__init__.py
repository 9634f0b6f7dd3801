"""The report's sections, one module each (`SECTIONS.register(Section(...))`, pipeline/render/html.py): a new
table or figure of report.html is a new file here, or an installed plugin's module named by the entry point group
`speech_eval.sections`. A section renders its HTML from the page (pipeline/render/html.py Page), and draws its own
figures."""
