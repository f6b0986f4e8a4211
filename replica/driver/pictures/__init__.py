"""Pictures of a run from its trace: a Chrome trace-event document
(``_chrome_trace``) and an SVG timeline of the workers' reconcile phases
(``_timeline``)."""
