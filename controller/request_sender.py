"""`BrokerRequestSender`: how the controller's rooms send requests to brokers.

A room fills a batch made for the current term (its controller epoch, live brokers and topic ids) and sends it;
nothing is sent while this broker does not act as the controller.
"""

from __future__ import annotations

import logging

from controller.activity import ControllerActivity
from controller.channel import ControllerBrokerRequestBatch, ControllerChannelManager, SentRequests
from controller.context import ControllerContext

log = logging.getLogger("controller")


class BrokerRequestSender:
    """Makes batches of controller requests for the current term and sends them through the channel."""

    def __init__(self, channel: ControllerChannelManager, context: ControllerContext,
                 activity: ControllerActivity) -> None:
        self._channel = channel
        self._context = context
        self._activity = activity

    def new_batch(self) -> ControllerBrokerRequestBatch:
        context = self._context
        return ControllerBrokerRequestBatch(self._channel, context.epoch, context.live_brokers, context.topic_ids)

    def send(self, batch: ControllerBrokerRequestBatch) -> SentRequests:
        """Send a batch, unless this broker stopped acting as the controller meanwhile (a suspended session):
        whatever it wrote is read again by the next term, which tells the brokers."""
        if not self._activity.is_active:
            log.info("Controller %d does not act as the controller now: requests not sent", self._activity.broker_id)
            return SentRequests({}, {})
        return batch.send()
