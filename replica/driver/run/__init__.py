"""Running specs: against a fresh in-process replica (``_runner``) or replica
processes (``_spawned``), on several topologies (``_matrix``), under chosen
schedules (``_explore``), the race and its fix (``_demo``); what a run prints
(``_report``), the files it writes (``_paths``) and the specs shipped with the
package (``_bundled``)."""
