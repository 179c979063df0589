//! Scheduler micro-benchmark: a steady pop + push with a fixed number of pending events,
//! new events 1 ns to 100 us ahead, for dcsim's scheduler and for std's BinaryHeap.
//!
//! Run: `cargo run --release -p dcsim-engine --example heapbench`
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use dcsim_engine::{Dur, Scheduler, Time};

const N: u64 = 10_000_000;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// How far ahead the next event is: 1 ns to 100 us, uniform. A multiply and a shift map the
/// random number onto the range, where a `%` put a 64-bit division into every iteration of
/// the loop that is timed.
fn ahead(x: &mut u64) -> u64 {
    1_000 + ((u128::from(xorshift(x)) * 100_000_000) >> 64) as u64
}

fn main() {
    for pending in [16usize, 256, 4096, 65536] {
        let mut s: Scheduler<u64> = Scheduler::new();
        let mut x: u64 = 12345;
        for i in 0..pending {
            s.schedule(Time(i as u64 * 1000), i as u64);
        }
        let t = Instant::now();
        let mut acc = 0u64;
        for _ in 0..N {
            let (now, ev) = s.pop().expect("non-empty");
            acc = acc.wrapping_add(ev);
            s.schedule(now + Dur::from_ps(ahead(&mut x)), ev);
        }
        let ours = t.elapsed().as_secs_f64() / N as f64 * 1e9;

        let mut h = BinaryHeap::new();
        let mut seq = 0u64;
        let mut x: u64 = 12345;
        for i in 0..pending {
            h.push(Reverse((
                (i as u128 * 1000) << 64 | u128::from(seq),
                i as u64,
            )));
            seq += 1;
        }
        let t = Instant::now();
        for _ in 0..N {
            let Reverse((k, ev)) = h.pop().expect("non-empty");
            acc = acc.wrapping_add(ev);
            let now = (k >> 64) as u64;
            h.push(Reverse((
                u128::from(now + ahead(&mut x)) << 64 | u128::from(seq),
                ev,
            )));
            seq += 1;
        }
        let std = t.elapsed().as_secs_f64() / N as f64 * 1e9;
        println!(
            "pending {pending:>6}: dcsim {ours:5.1} ns, std BinaryHeap {std:5.1} ns per pop+push (checksum {acc})"
        );
    }
}
