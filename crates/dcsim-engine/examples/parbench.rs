//! What a parallel run in exact order (`dcsim_engine::parallel`) gains on this machine, on
//! a model shaped like a busy network: tokens hop between nodes, each hop touching its
//! node's state and doing some work. Three hops in four stay in their part and come
//! 1.2 or 2.4 µs later (the next packet of a busy 10 Gb/s link); one in four crosses to the
//! other part after at least the look-ahead (a 4 µs link). As in dcsim's networks, where
//! the scheduler holds one event per busy link rather than one per packet, a window
//! handles about as many events as are pending. Prints, for each amount of work per event
//! (rounds of a hash), the one-thread run and the two-part run in ns per event, how many
//! events a window held, and where the two threads' time went (summed over both).
//!
//! `--copies` sends every crossing as a split network would in the worst case (ADR 0010):
//! a 64-byte copy of the packet as a message, taken in by the other part into its own
//! store, and the event created late there in a slot its sender reserved.
//!
//! Run: `cargo run --release -p dcsim-engine --example parbench [-- [--lookahead NS] [--copies] ROUNDS...]`
use std::time::Instant;

use dcsim_engine::parallel::{Late, Out, Part, Slot, line_round_trip, run_parallel};
use dcsim_engine::{Dur, Scheduler, Time, splitmix};

/// Nodes per part.
const NODES: usize = 96;
/// Tokens (busy links) per part.
const TOKENS: usize = 400;
/// The look-ahead: a 4 µs link.
const LOOKAHEAD: u64 = 4_000_000;
/// Simulated time.
const END: Time = Time(40_000_000_000);

/// Aligned so that two parts never share a cache line.
#[repr(align(128))]
struct Net {
    part: usize,
    parts: usize,
    /// 256 bytes of state per node, like a port's counters and queue.
    state: Vec<[u64; 32]>,
    rounds: u32,
    sum: u64,
    /// Whether crossings travel as copies (`--copies`).
    copies: bool,
    /// The copies taken in, one per node, as the receiving end of a link keeps them.
    inbound: Vec<[u64; 8]>,
}

/// A crossing token as a split network sends it: the packet's copy, its arrival and the
/// slot its event takes.
struct Copied {
    packet: [u64; 8],
    at: Time,
    ev: (u32, u64),
    slot: Slot,
}

impl Net {
    /// Handles one token: returns the part, time and token of the event it creates.
    #[inline]
    fn step(&mut self, now: Time, (node, val): (u32, u64)) -> (usize, Time, (u32, u64)) {
        let st = &mut self.state[node as usize];
        let mut x = val ^ st[(val % 32) as usize];
        for _ in 0..self.rounds {
            x = splitmix(x);
        }
        st[(x % 32) as usize] = x;
        st[0] = st[0].wrapping_add(1);
        self.sum = self.sum.wrapping_add(x);
        // A 1,500-byte packet takes 1.2 µs at 10 Gb/s.
        let (part, delay) = if (x >> 8).is_multiple_of(4) {
            (
                (self.part + 1) % self.parts,
                LOOKAHEAD + 1_200_000 * (x % 3),
            )
        } else {
            (self.part, 1_200_000 * (1 + x % 2))
        };
        let next = ((x >> 16) % NODES as u64) as u32;
        (part, now + Dur(delay), (next, x))
    }
}

impl Part for Net {
    type Event = (u32, u64);
    type Message = Copied;
    fn handle(&mut self, now: Time, ev: (u32, u64), out: &mut Out<(u32, u64), Copied>) {
        let (part, at, ev) = self.step(now, ev);
        if self.copies && part != self.part {
            let slot = out.reserve();
            let x = ev.1;
            let packet = [x, x ^ 1, x ^ 2, x ^ 3, x ^ 4, x ^ 5, x ^ 6, x ^ 7];
            out.send(
                part,
                Copied {
                    packet,
                    at,
                    ev,
                    slot,
                },
            );
        } else {
            out.schedule(part, at, ev);
        }
    }

    fn receive(&mut self, msg: &Copied, late: &mut Late<(u32, u64)>) {
        self.inbound[msg.ev.0 as usize] = msg.packet;
        late.schedule_as(msg.at, msg.ev, msg.slot);
    }
}

/// The one-thread run as dcsim's `World` does it: one [`Scheduler`] (64-bit keys), without
/// the parallel engine's types. Returns the number of events handled.
fn one_thread(parts: &mut [Net], init: &[(usize, Time, (u32, u64))]) -> u64 {
    let mut sched = Scheduler::new();
    for &(p, t, ev) in init {
        sched.schedule(t, (p as u32, ev));
    }
    let mut events = 0;
    while let Some((now, (p, ev))) = sched.pop_until(END) {
        let (q, at, e) = parts[p as usize].step(now, ev);
        sched.schedule(at, (q as u32, e));
        events += 1;
    }
    events
}

fn model(parts: usize, rounds: u32, copies: bool) -> Vec<Net> {
    (0..parts)
        .map(|part| Net {
            part,
            parts,
            state: vec![[0; 32]; NODES],
            rounds,
            sum: 0,
            copies,
            inbound: vec![[0; 8]; NODES],
        })
        .collect()
}

fn init(parts: usize) -> Vec<(usize, Time, (u32, u64))> {
    (0..parts * TOKENS)
        .map(|i| {
            let r = splitmix(i as u64);
            (
                i % parts,
                Time(r % LOOKAHEAD),
                ((r >> 32) as u32 % NODES as u32, r),
            )
        })
        .collect()
}

fn main() {
    // `--lookahead NS` hands the engine a shorter look-ahead than the model's 4 µs: windows
    // as wide as it, so more of them with fewer events each (the model's sends stay 4 µs or
    // more ahead, so the run stays valid).
    let mut args = std::env::args().skip(1);
    let mut lookahead = LOOKAHEAD;
    let mut rounds: Vec<u32> = Vec::new();
    let mut copies = false;
    while let Some(a) = args.next() {
        if a == "--copies" {
            copies = true;
        } else if a == "--lookahead" {
            let ns: u64 = args
                .next()
                .and_then(|v| v.parse().ok())
                .expect("--lookahead takes a number of nanoseconds");
            assert!(
                (1..=LOOKAHEAD / 1000).contains(&ns),
                "--lookahead must be 1 to {} ns",
                LOOKAHEAD / 1000
            );
            lookahead = ns * 1000;
        } else {
            rounds.push(a.parse().expect("ROUNDS are numbers"));
        }
    }
    let rounds = if rounds.is_empty() {
        vec![0, 8, 24]
    } else {
        rounds
    };
    println!(
        "rounds  one thread ns/event  two parts ns/event  speed-up  events/window  numbering  handling  renumbering (ns/event)  line round trip (ns)"
    );
    for r in rounds {
        let parts = 2;
        let init = init(parts);
        let mut one = model(parts, r, false);
        let t = Instant::now();
        let n = one_thread(&mut one, &init);
        let seq = t.elapsed().as_secs_f64();
        let mut two = model(parts, r, copies);
        let trip = line_round_trip(20_000);
        let t = Instant::now();
        let stats = run_parallel(&mut two, &init, END, Dur(lookahead), None).expect("look-ahead");
        let par = t.elapsed().as_secs_f64();
        assert_eq!(stats.events, n);
        for (a, b) in one.iter().zip(&two) {
            assert!(
                a.sum == b.sum && a.state == b.state,
                "the parallel run's states differ from the one-thread run's"
            );
        }
        println!(
            "{r:>6}  {:>19.1}  {:>18.1}  {:>7.2}×  {:>13.0}  {:>9.1}  {:>8.1}  {:>11.1}  {trip:>20.0}",
            seq * 1e9 / n as f64,
            par * 1e9 / n as f64,
            seq / par,
            n as f64 / stats.windows as f64,
            stats.numbering_seconds * 1e9 / n as f64,
            stats.handle_seconds * 1e9 / n as f64,
            stats.renumber_seconds * 1e9 / n as f64,
        );
    }
}
