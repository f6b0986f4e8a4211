"""The controller's side: a :class:`~replica.Controller` that opens a
connection to every process, sends commands, and merges the processes'
responses (frontiers, peeks, subscribes), and the errors its calls raise."""
