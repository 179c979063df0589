//! `xpass-zero-loss`: runs every other ExpressPass experiment and sums their data drops.

use serde_json::{Value, json};

use crate::common::{Ctx, put};

/// `xpass-zero-loss`: runs every other ExpressPass experiment and sums their data drops.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let mut out = json!({});
    let mut total = 0u64;
    for e in crate::EXPERIMENTS.iter().filter(|e| {
        e.name.starts_with("xpass-") && !matches!(e.name, "xpass-zero-loss" | "xpass-fattree")
    }) {
        let mut sub = Ctx::new(ctx.quick, ctx.out.join(e.name), ctx.jobs)?;
        sub.fresh = ctx.fresh;
        let r = (e.run)(&sub)?;
        sub.write_json("result.json", &r)?;
        sub.render_plots()?;
        let d = r["xpass_data_drops"].as_u64().unwrap_or(0);
        put(&mut out, &["data_drops", e.name], d);
        total += d;
    }
    put(&mut out, &["data_drops_total"], total);
    Ok(out)
}
