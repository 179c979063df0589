//! Sorted byte ranges: a receiver's out-of-order buffer, a sender's list of ranges to
//! resend.

/// Inserts `[s, e)` into sorted, disjoint, non-adjacent ranges, merging as needed.
pub(crate) fn insert_range(v: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    let i = v.partition_point(|r| r.1 < s);
    let mut j = i;
    let (mut ns, mut ne) = (s, e);
    while j < v.len() && v[j].0 <= ne {
        ns = ns.min(v[j].0);
        ne = ne.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, [(ns, ne)]);
}

/// Advances `next` (the first byte not yet held in order) over the ranges of `ooo` that
/// now join it, removing them.
#[inline]
pub(crate) fn advance(next: &mut u64, ooo: &mut Vec<(u64, u64)>) {
    while let Some(&(s, e)) = ooo.first() {
        if s > *next {
            break;
        }
        *next = (*next).max(e);
        ooo.remove(0);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::insert_range;

    proptest! {
        /// The out-of-order buffer holds exactly the union of the inserted ranges, sorted,
        /// disjoint and non-adjacent.
        #[test]
        fn ooo_ranges_are_the_union(ranges in proptest::collection::vec((0u64..200, 1u64..20), 0..50)) {
            let mut v = Vec::new();
            let mut covered = [false; 220];
            for (s, l) in ranges {
                insert_range(&mut v, s, s + l);
                for b in s..s + l { covered[b as usize] = true; }
            }
            for w in v.windows(2) { prop_assert!(w[0].1 < w[1].0); }
            let mut got = [false; 220];
            for &(s, e) in &v { for b in s..e { got[b as usize] = true; } }
            prop_assert_eq!(got, covered);
        }
    }
}
