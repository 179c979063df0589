//! Ethernet framing: the one place where IP bytes become wire bytes.
//!
//! Links serialize *wire* bytes: the IP packet plus 18 B of Ethernet header and FCS plus
//! 20 B of preamble, start-of-frame delimiter and inter-frame gap, with a minimum frame of
//! 64 B (84 B on the wire). A 1500 B IP packet is 1538 B on the wire; a 40 B TCP ACK is an
//! 84 B minimum frame. ExpressPass's credit share, 84 / (84 + 1538) = 5.18 % of the link,
//! follows from these numbers. Queue limits and occupancy are also counted in wire bytes,
//! as in the ns-2 ExpressPass code (whose packet sizes include the framing).

/// Ethernet header (14 B) plus frame check sequence (4 B).
pub const ETH_HEADER_FCS_BYTES: u32 = 18;
/// Preamble and start-of-frame delimiter (8 B) plus the minimum inter-frame gap (12 B).
pub const PREAMBLE_IFG_BYTES: u32 = 20;
/// Per-packet framing overhead on the wire: 38 B.
pub const FRAMING_BYTES: u32 = ETH_HEADER_FCS_BYTES + PREAMBLE_IFG_BYTES;
/// The smallest Ethernet frame (64 B) on the wire: 84 B.
pub const MIN_WIRE_BYTES: u32 = 64 + PREAMBLE_IFG_BYTES;
/// The standard IP MTU.
pub const IP_MTU_BYTES: u32 = 1500;
/// A full-size frame on the wire: 1538 B.
pub const MAX_WIRE_BYTES: u32 = IP_MTU_BYTES + FRAMING_BYTES;
/// IPv4 (20 B) plus TCP (20 B) headers without options.
pub const TCP_IP_HEADER_BYTES: u32 = 40;
/// TCP maximum segment size for a 1500 B MTU: 1460 B.
pub const TCP_MSS_BYTES: u32 = IP_MTU_BYTES - TCP_IP_HEADER_BYTES;

/// Wire bytes of an IP packet of `ip_bytes`: `max(ip_bytes + 38, 84)`.
#[inline]
pub const fn wire_bytes(ip_bytes: u32) -> u32 {
    let w = ip_bytes + FRAMING_BYTES;
    if w < MIN_WIRE_BYTES {
        MIN_WIRE_BYTES
    } else {
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_matches_the_ethernet_standard() {
        assert_eq!(wire_bytes(1500), 1538);
        assert_eq!(wire_bytes(40), 84);
        assert_eq!(wire_bytes(46), 84);
        assert_eq!(wire_bytes(47), 85);
        assert_eq!(TCP_MSS_BYTES, 1460);
        // The ExpressPass credit share.
        let share = f64::from(MIN_WIRE_BYTES) / f64::from(MIN_WIRE_BYTES + MAX_WIRE_BYTES);
        assert!((share - 0.051_787_9).abs() < 1e-7);
    }
}
