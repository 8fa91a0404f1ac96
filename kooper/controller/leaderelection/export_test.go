package leaderelection

// KeepLease makes a Runner built from cfg keep the Lease after a clean
// shutdown, as a crashed leader does: a standby then takes it over once it
// expired.
func KeepLease(cfg *Config) { cfg.keepLease = true }

// SetLeading makes r report that it leads, or not, without a Lease, for
// the tests of what it reports.
func SetLeading(r *Runner, leading bool) { r.leading.Store(leading) }
