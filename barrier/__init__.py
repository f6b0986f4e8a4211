"""The reconcile barrier between a replica's two runtimes (DESIGN.md §2.7).

Not built yet: this package is reserved by the distribution's layout and holds
no public names.
"""

__all__: list[str] = []
