//! `xpass-zero-loss`: runs every other ExpressPass microbenchmark and sums their data
//! drops.

use serde_json::{Value, json};

use crate::common::{Ctx, put};
use crate::verdict::at;

/// `xpass-zero-loss`: runs every other ExpressPass microbenchmark (each in its own folder
/// under this one's, or beside it with [`Ctx::siblings`]), sums their data drops and counts
/// each one's failed checks.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let mut out = json!({});
    let mut total = 0u64;
    for e in crate::EXPERIMENTS.iter().filter(|e| {
        e.name.starts_with("xpass-") && !matches!(e.name, "xpass-zero-loss" | "xpass-fattree")
    }) {
        let dir = ctx.siblings.as_ref().unwrap_or(&ctx.out).join(e.name);
        let _lock = crate::take_folder(&dir, e.name)?;
        let mut sub = Ctx::new(ctx.quick, dir, ctx.jobs)?;
        sub.fresh = ctx.fresh;
        let o = crate::run_in(e, &sub)?;
        let d = at(&o.result, &["xpass_data_drops"])
            .ok_or_else(|| format!("{}: result.json has no xpass_data_drops", e.name))?;
        put(&mut out, &["data_drops", e.name], d);
        put(&mut out, &["checks_failed", e.name], o.failed_checks());
        total += d as u64;
    }
    put(&mut out, &["data_drops_total"], total);
    Ok(out)
}
