//! The host transmit budget: how much a host may queue in its NIC, and the back-pressure
//! that makes its senders wait instead; a sender may ask for less (TCP small queues).

use dcsim_engine::Schedule;

use crate::{HostId, NetCx, NetEvent, Network, PortId};

/// Default host transmit budget: 128 KB of wire bytes in the NIC queue.
pub const DEFAULT_TX_BUDGET_BYTES: u64 = 128_000;

impl Network {
    /// Sets the host transmit budget (see [`Network::nic_room`]).
    pub fn set_tx_budget(&mut self, bytes: u64) {
        self.tx_budget = bytes;
    }

    /// Whether a transport on host `h` may hand a packet of `wire_bytes` to its NIC now:
    /// the NIC queue stays within the host transmit budget. If not, the host is marked as
    /// waiting and [`Network::on_port_ready`] reports when the queue has drained to half
    /// the budget. This is the back-pressure of a real stack (Linux's TCP small queues):
    /// a host does not drop its own packets, and a sender limited by its NIC waits instead
    /// of piling its window into the NIC queue.
    ///
    /// While the host is waiting, every sender is refused, not only those that found the
    /// queue full: otherwise ACK-clocked flows refill each packet's worth of room as it
    /// frees, the queue never drains to the wake-up mark, and a flow that blocked (a new
    /// short flow behind long ones) starves for milliseconds. Refused senders join the
    /// waiting list in order and are woken round-robin.
    #[inline(always)]
    pub fn nic_room<S: Schedule<NetEvent>>(
        &mut self,
        h: HostId,
        wire_bytes: u32,
        cx: &mut NetCx<'_, S>,
    ) -> bool {
        self.nic_room_within(h, wire_bytes, u64::MAX, cx)
    }

    /// [`Network::nic_room`], also refused while the NIC queue holds more than `small`
    /// bytes (a sender's own limit: Linux's TCP small queues). Refused for that, the host
    /// is woken when the queue has drained to `small`, not to half the budget.
    #[inline(always)]
    pub fn nic_room_within<S: Schedule<NetEvent>>(
        &mut self,
        h: HostId,
        wire_bytes: u32,
        small: u64,
        cx: &mut NetCx<'_, S>,
    ) -> bool {
        if self.nic_waiting[h.index()] {
            return false;
        }
        let nic = self.nic[h.index()];
        let q = self.backlog_bytes_at(nic, cx.now, cx.pool);
        let full = q + u64::from(wire_bytes) > self.tx_budget;
        if q == 0 || (!full && q <= small) {
            return true;
        }
        self.nic_waiting[h.index()] = true;
        self.nic_wake[h.index()] = if full { self.tx_budget / 2 } else { small };
        self.wake_when_drained(nic, h, cx);
        false
    }

    /// A FIFO NIC has no event per transmission: schedules a `PortReady` for when its
    /// queue, as it stands, will have drained to the waiting host's mark.
    #[inline]
    pub(crate) fn wake_when_drained<S: Schedule<NetEvent>>(
        &mut self,
        nic: PortId,
        h: HostId,
        cx: &mut NetCx<'_, S>,
    ) {
        let p = &mut self.ports[nic.index()];
        if !p.is_fifo() {
            return; // its transmissions wake it
        }
        let at = p.drains_to(self.nic_wake[h.index()]).unwrap_or(cx.now);
        if let Some(t) = p.wake_at(at) {
            cx.sched.at(t, NetEvent::PortReady(nic));
        }
    }
}
