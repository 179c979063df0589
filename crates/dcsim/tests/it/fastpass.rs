//! Fastpass in the network: arbiter-granted slots and spines keep fabric queues at one
//! packet, lost control packets are recovered, runs are deterministic and conserve packets.

use proptest::prelude::*;

use crate::run;

/// Largest data queue (bytes) over the ports `node -> peer` of the tiers given.
fn max_data_queue(r: &dcsim::Results, from: &str, to: &str) -> u64 {
    r.ports
        .iter()
        .filter(|p| p.node.starts_with(from) && p.peer.starts_with(to))
        .map(|p| p.max_data_queue_bytes)
        .max()
        .unwrap()
}

const FRAME: u64 = 1538;

/// scenarios/fastpass-leafspine.toml: an 8-to-1 incast and four 1 MB transfers. The
/// arbiter never puts two packets on one fabric link in a slot and hosts send only in
/// their slots (debug assertions in the code, on in tests), so a leaf's uplinks and a
/// spine's downlinks never queue a data packet behind another. A receiver's downlink gets
/// at most one packet per slot from each distance: packets from its own leaf arrive two
/// hops (2 x (1 us + 1.23 us) = 3.6 slots) sooner than packets sent in the same slot from
/// other leaves, so up to five frames can meet there. DCTCP on the same flows queues far
/// more at the incast receiver.
#[test]
fn fastpass_keeps_fabric_queues_at_one_packet() {
    let r = run("scenarios/fastpass-leafspine.toml", &[]);
    assert_eq!(r.summary["packets_dropped"], 0);
    assert_eq!(r.summary["flows_completed"], 12);
    assert_eq!(max_data_queue(&r, "leaf", "spine"), FRAME);
    assert_eq!(max_data_queue(&r, "spine", "leaf"), FRAME);
    let down = max_data_queue(&r, "leaf", "h");
    assert!(down <= 5 * FRAME, "receiver downlink {down} B");
    let fp = &r.summary["fastpass"];
    assert_eq!(fp["slots_late"], 0, "{fp}");
    assert_eq!(fp["grants_lost"], 0, "{fp}");
    let overhead = fp["control_overhead"].as_f64().unwrap();
    assert!(overhead > 0.0 && overhead < 0.02, "{fp}");
    // Every data packet had a slot: as many slots granted as packets the flows needed
    // (8 x 44 for 64,000 B, 4 x 685 for 1,000,000 B), none wasted.
    assert_eq!(fp["slots_granted"], 8 * 44 + 4 * 685, "{fp}");
    let dctcp = run(
        "scenarios/fastpass-leafspine.toml",
        &[
            r#"transport={kind="tcp",cc="dctcp"}"#,
            r#"queue={kind="ecn",buffer="250pkts",mark_threshold="65pkts"}"#,
        ],
    );
    let dctcp_down = max_data_queue(&dctcp, "leaf", "h");
    assert!(
        dctcp_down >= 10 * down,
        "DCTCP {dctcp_down} B against {down}"
    );
}

/// With a fifth of the control packets lost, reports are repeated and lost grants are
/// allocated again: every flow still completes, no data is lost, and the run is
/// deterministic.
#[test]
fn lost_requests_and_grants_are_recovered() {
    let sets = ["transport.control_loss=0.2"];
    let r = run("scenarios/fastpass-leafspine.toml", &sets);
    assert_eq!(r.summary["flows_completed"], 12);
    assert_eq!(r.summary["packets_dropped"], 0);
    let fp = &r.summary["fastpass"];
    assert!(fp["control_lost_injected"].as_u64().unwrap() > 10, "{fp}");
    assert!(fp["request_retransmits"].as_u64().unwrap() > 0, "{fp}");
    assert!(fp["grants_lost"].as_u64().unwrap() > 0, "{fp}");
    let again = run("scenarios/fastpass-leafspine.toml", &sets);
    assert_eq!(r.digest(), again.digest());
}

/// A host granted every slot for a long transfer (20 MB, 214 batches) sends its reports on
/// the same link: each control frame pushes its later data packets off their slots, and
/// with no free slot to catch up the lag only grows (the NIC queues 12 frames). Slots one
/// minimum frame longer (`slot_bytes = 1622`) leave room for the reports: one frame, at
/// the price of 84/1622 of the link.
#[test]
fn control_frames_push_a_busy_host_off_its_slots() {
    let nic = |slot: &str| {
        let r = run(
            "scenarios/fastpass-leafspine.toml",
            &[
                "flows[0].size=20MB",
                &format!("transport.slot_bytes={slot}"),
            ],
        );
        assert_eq!(r.summary["packets_dropped"], 0);
        r.ports
            .iter()
            .find(|p| p.node == "h1")
            .unwrap()
            .max_data_queue_bytes
    };
    let (full, guard) = (nic("1538"), nic("1622"));
    assert!(full >= 8 * FRAME, "{full} B");
    assert_eq!(guard, FRAME);
}

/// Every flow's wait for its first slot is reported: its host's report, the wait for the
/// arbiter's next batch, the grant's lead and the slots given to others first. It is at
/// least the lead, and smaller batches (ticks 8 slots apart instead of 64) shorten it.
#[test]
fn the_wait_for_a_first_slot_is_reported_and_shrinks_with_the_batch() {
    let wait = |batch: u32| {
        let r = run(
            "scenarios/fastpass-leafspine.toml",
            &[&format!("transport.batch_slots={batch}")],
        );
        assert_eq!(r.summary["flows_completed"], 12);
        let fp = r.summary["fastpass"].clone();
        let w = &fp["first_slot_wait_us"];
        assert_eq!(w["flows"], 12, "{fp}");
        let lead_us = fp["lead_ns"].as_f64().unwrap() / 1e3;
        let slot_us = fp["slot_ps"].as_f64().unwrap() / 1e6;
        let (p50, max) = (w["p50"].as_f64().unwrap(), w["max"].as_f64().unwrap());
        assert!(
            p50 >= lead_us,
            "median {p50} µs below the lead {lead_us} µs: {fp}"
        );
        assert!(max >= p50, "{fp}");
        (w["mean"].as_f64().unwrap(), slot_us)
    };
    let ((small, slot), (large, _)) = (wait(8), wait(64));
    // Measured: 49 µs with batches of 8, 190 µs with 64.
    assert!(
        large > 2.0 * small && large - small > 10.0 * slot,
        "mean wait with 8-slot batches {small} µs, with 64 {large} µs"
    );
}

fn leaf_spine(flows: &[(u8, u8, u32, u16)], loss: u8) -> String {
    let mut s = format!(
        "[topology]\nkind = \"leaf-spine\"\nleaves = 3\nhosts_per_leaf = 3\nspines = 3\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
         [queue]\nkind = \"prio\"\ncontrol_buffer = \"64pkts\"\ninner = {{ kind = \"droptail\", buffer = \"100pkts\" }}\n\
         [transport]\nkind = \"fastpass\"\nbatch_slots = 64\ncontrol_loss = {}\n",
        f64::from(loss) / 10.0
    );
    for &(a, b, size, start) in flows {
        let (src, dst) = (u32::from(a) % 8, u32::from(b) % 8);
        if src == dst {
            continue;
        }
        s += &format!(
            "[[flows]]\nsrc = {src}\ndst = {dst}\nsize = \"{size}B\"\nstart = \"{start}us\"\n"
        );
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Random flows among the 8 hosts that are not the arbiter, with up to 30 % of the
    /// control packets lost: every packet created is delivered, every flow completes with
    /// all its bytes, and no data packet is dropped.
    #[test]
    fn fastpass_runs_conserve_packets_and_complete(
        flows in proptest::collection::vec((0u8..16, 0u8..16, 1u32..200_000, 0u16..300), 1..12),
        loss in 0u8..4,
    ) {
        let text = leaf_spine(&flows, loss);
        if !text.contains("[[flows]]") {
            return Ok(());
        }
        let (world, r) = crate::run_text(&text);
        let s = &r.summary;
        prop_assert_eq!(s["packets_in_network"].as_u64().unwrap(), 0, "{}", text);
        prop_assert_eq!(s["packets_created"].as_u64().unwrap(), s["packets_delivered"].as_u64().unwrap(), "{}", text);
        prop_assert_eq!(world.net().packets_inside(), 0);
        prop_assert_eq!(s["flows_completed"].as_u64().unwrap(), r.flows().unwrap().len() as u64, "{}", text);
        for f in r.flows().unwrap() {
            prop_assert_eq!(Some(f.delivered_bytes), f.size_bytes);
        }
    }
}
