//! Integration tests of dcsim-arbiter-bench, compiled into one binary (docs/style.md §7).

mod engines;
