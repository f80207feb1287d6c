"""The broker's coordinators: rooms that keep state in an internal topic and answer the clients that share it
(the group coordinator, ``group/``)."""
