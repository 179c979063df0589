// Seeds the C library's rand() of the ExpressPass authors' ns-2 from the environment, for
// dcsim's validation build (validation/xpass_ns2.py). Their agent draws its credit jitter
// from rand(), which nothing in a dumbbell run seeds, so without this every run of one
// configuration draws the same jitter. NS2_SRAND=N calls srand(N) before ns starts; unset,
// rand() keeps the C library's default sequence (srand(1)).
#include <stdlib.h>

namespace {

__attribute__((constructor)) void seed_rand_from_environment() {
	const char* s = getenv("NS2_SRAND");
	if (s != 0 && *s != 0)
		srand(static_cast<unsigned>(strtoul(s, 0, 10)));
}

}  // namespace
