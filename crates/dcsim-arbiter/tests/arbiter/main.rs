//! Integration tests of dcsim-arbiter: one binary (see docs/style.md §7).

mod engines;
