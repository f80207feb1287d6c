"""Length-prefixed frames over asyncio (frames.py), which the broker's connections read and write, and the client
connection to a broker (connection.py), which producers, consumers, follower fetchers and the controller's channel
use."""
