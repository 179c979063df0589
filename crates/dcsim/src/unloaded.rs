//! Unloaded completion times: a flow alone on its path at line rate.

use dcsim_engine::{Dur, Rate};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, wire_bytes};

/// Completion time of `size_bytes` sent alone at line rate along links `(rate, delay)`,
/// packetized into `payload`-byte packets of `full_wire` wire bytes (the last one smaller):
/// the arrival of the last byte at the receiver, counting store-and-forward at every hop
/// and pipelining behind the slowest link.
///
/// For equal packets through a tandem of links, packet k leaves hop i at
/// `Σ_{j≤i} tx_j + Σ_{j<i} d_j + k·max_{j≤i} tx_j`; the last (possibly shorter) packet is
/// then followed hop by hop.
pub fn unloaded_fct(
    links: impl Iterator<Item = (Rate, Dur)>,
    size_bytes: u64,
    payload: u64,
    full_wire: u32,
) -> Dur {
    let n = size_bytes.div_ceil(payload).max(1);
    let last_payload = size_bytes - (n - 1) * payload;
    let last_wire = u64::from(wire_bytes(last_payload as u32 + TCP_IP_HEADER_BYTES))
        .min(u64::from(full_wire).max(1));
    let last_wire = if n == 1 || last_payload < payload {
        last_wire
    } else {
        u64::from(full_wire)
    };
    let (mut sum_tx, mut sum_d, mut max_tx) = (Dur::ZERO, Dur::ZERO, Dur::ZERO);
    let mut t_last = Dur::ZERO;
    for (rate, delay) in links {
        let tx = rate.tx_time(u64::from(full_wire));
        sum_tx += tx;
        max_tx = max_tx.max(tx);
        let prev_dep = if n >= 2 {
            sum_tx + sum_d + max_tx * (n - 2)
        } else {
            Dur::ZERO
        };
        t_last = t_last.max(prev_dep) + rate.tx_time(last_wire) + delay;
        sum_d += delay;
    }
    t_last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unloaded_fct_of_one_packet_is_store_and_forward_plus_propagation() {
        let links = [(Rate::from_gbps(10), Dur::from_us(1)); 3];
        let d = unloaded_fct(links.into_iter(), 100, 1460, 1538);
        // 100 B payload + 40 B TCP/IP + 38 B framing = 178 wire bytes per hop.
        assert_eq!(d, Rate::from_gbps(10).tx_time(178) * 3 + Dur::from_us(3));
    }

    #[test]
    fn unloaded_fct_pipelines_behind_the_bottleneck() {
        // 10 full packets, 10G then 1G then 10G: the last arrives after the first packet's
        // path time plus 9 serializations at 1G.
        let links = [
            (Rate::from_gbps(10), Dur::from_us(1)),
            (Rate::from_gbps(1), Dur::from_us(1)),
            (Rate::from_gbps(10), Dur::from_us(1)),
        ];
        let d = unloaded_fct(links.into_iter(), 14600, 1460, 1538);
        let first = Rate::from_gbps(10).tx_time(1538) * 2
            + Rate::from_gbps(1).tx_time(1538)
            + Dur::from_us(3);
        assert_eq!(d, first + Rate::from_gbps(1).tx_time(1538) * 9);
    }
}
