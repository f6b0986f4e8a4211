"""The sharing registry of index incarnations between runtimes (DESIGN.md §2.8).

Not built yet: this package is reserved by the distribution's layout and holds
no public names.
"""

__all__: list[str] = []
