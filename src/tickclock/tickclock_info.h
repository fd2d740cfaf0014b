/* tickclock — the configuration and provenance types: part of
 * tickclock.h, which includes it inside its extern "C" block, after the
 * sources and the conversion (never on its own). tickclock_config says
 * what tickclock_init() is asked for; tickclock_info, what was chosen,
 * found how, how certain, and why the other sources were refused. */
#ifndef TICKCLOCK_INFO_H
#define TICKCLOCK_INFO_H

/* ---- configuration and provenance ----------------------------------- */
typedef struct tickclock_config {
  int source;              /* tickclock_source; AUTO = decide */
  uint32_t calibration_ms; /* 0 = a published frequency at once, or a quick
                              calibration (1 ms, lengthened x4 while its
                              bound exceeds 50 ppm); either is cross-checked
                              or refined later on a growing baseline; N =
                              one blocking calibration of N ms first, never
                              refined (the rate check measures on, for the
                              rate it holds the counter to); <= 1000 */
  uint32_t flags;          /* reserved, 0 */
} tickclock_config;

#define TICKCLOCK_MAX_CANDIDATES 8
#define TICKCLOCK_REASON_LEN 256 /* a candidate's or frequency source's reason */
#define TICKCLOCK_WHY_LEN 512    /* the state's one line: room for every reason whole */

/* tickclock_info.forced: who chose the source. */
#define TICKCLOCK_FORCED_NO 0        /* the automatic choice */
#define TICKCLOCK_FORCED_BY_CONFIG 1 /* tickclock_config.source */
#define TICKCLOCK_FORCED_BY_ENV 2    /* the TICKCLOCK_SOURCE environment variable */

typedef struct tickclock_candidate {
  int source;                        /* tickclock_source */
  const char *name;                  /* "tsc", "system", ... */
  int usable;                        /* 1 if it passed every check */
  int chosen;                        /* 1 for the source in use */
  double read_ns;                    /* measured cost of one read, 0 if not measured */
  char reason[TICKCLOCK_REASON_LEN]; /* why usable / refused */
} tickclock_candidate;

/* One frequency source for the counter, measured or read, and what the
 * decider made of it (the policy: src/tickclock/README.md). */
#define TICKCLOCK_MAX_FREQS 8 /* one entry per source kind (6 on x86) */
typedef struct tickclock_freq_candidate {
  const char *name;        /* "calibration", "perf_page", "cpuid_15h_crystal",
                              "cpuid_15h_known_crystal", "cpuid_15h_from_16h",
                              "cpuid_16h", "hypervisor_40000010", "xen_leaf3",
                              "pvclock_page" */
  int method;              /* tickclock_freq_method */
  int available;           /* 1: the source gave a frequency; 0: see reason
                              (names then: "calibration", "perf_page",
                              "cpuid_15h", "hypervisor", "cpuid_16h",
                              "pvclock_page") */
  uint64_t hz_num, hz_den; /* reduced rational, Hz; 0/0 when unavailable */
  double hz;
  double uncertainty_ppm;    /* the source's own quantisation / measurement bound */
  int checked;               /* compared with calibration */
  double ppm_vs_calibration; /* (hz / calibrated - 1) * 1e6, when checked */
  double bound_ppm;          /* the agreement bound it was held to, when checked */
  int usable;                /* may be used: agreed with calibration (or is it) */
  int chosen;
  char reason[TICKCLOCK_REASON_LEN];
} tickclock_freq_candidate;

typedef struct tickclock_info {
  /* hot: read by tickclock_to_ns/tickclock_delta_ns, the first 72 bytes
   * (two cache lines at most).
   * to_ns(t) = base_ns + conv(t - base_ticks) (t below base_ticks: the
   * previous state's); with scaled == 0 ticks are nanoseconds (identity). */
  int source;          /* tickclock_source in use */
  int scaled;          /* 1: convert with conv; 0: ticks are ns */
  tickclock_conv conv; /* ticks of the process's unit <-> ns */
  uint64_t base_ticks, base_ns;
  /* provenance */
  const char *source_name;
  uint64_t hz_num, hz_den; /* the source's frequency as a rational (Hz); the
                              unit's is conv.hz_num / conv.hz_den */
  double hz;               /* hz_num / hz_den: the source's rate. Ticks handed out
                              are in the process's unit, whose rate is unit_hz
                              (differs after a switch: see unit_hz) */
  int freq_method;         /* tickclock_freq_method */
  const char *freq_method_name;
  double uncertainty_ppm;               /* of the frequency; 0 when exact */
  uint64_t baseline_ns;                 /* the calibration's baseline (CLOCK_MONOTONIC_RAW ns
                                           between its brackets); it grows x4 per refinement,
                                           which stops once it spans 1 s (the last one may
                                           be longer: it runs when a conversion finds it
                                           due); 0 when nothing was measured */
  int freq_pending_check;               /* 1: a published frequency (perf page, CPUID
                                           0x15 with its crystal on bare metal, a
                                           hypervisor leaf, CNTFRQ, the TOD) was used at
                                           once, before any calibration;
                                           the first refinement (from 1 ms on) compares it
                                           with calibration and publishes the verdict as
                                           a new state (see freqs[]) */
  double resolution_ns;                 /* granularity of one tick, ns */
  int forced;                           /* TICKCLOCK_FORCED_*: who chose the source */
  int request_refused;                  /* a forced source was unusable; automatic choice made */
  char why[TICKCLOCK_WHY_LEN];          /* one line: why this source (source_name is
                                           not repeated in it) */
  char env_error[TICKCLOCK_REASON_LEN]; /* bad TICKCLOCK_SOURCE, or "" */
  unsigned n_candidates;
  tickclock_candidate candidates[TICKCLOCK_MAX_CANDIDATES];
  const char *freq_detail; /* the precise rule, e.g. "cpuid_15h_crystal",
                              "calibration", "identity" (probe: tsc_hz.method) */
  unsigned n_freqs;        /* frequency sources found for the counter */
  tickclock_freq_candidate freqs[TICKCLOCK_MAX_FREQS];
  /* pairwise disagreement (freqs[i].hz / freqs[j].hz - 1) * 1e6; 0 where
   * either is unavailable */
  double freq_disagreement_ppm[TICKCLOCK_MAX_FREQS][TICKCLOCK_MAX_FREQS];
  double max_disagreement_ppm; /* largest |entry| above, 0 with < 2 sources */
  int revalidated;             /* 1: this state replaced a counter that failed
                                  re-validation (why says which check) */
  /* The unit and how readings reach it. */
  int unit_source;                   /* the source whose tick is the unit (the first
                                        published one) */
  int read_path;                     /* TICKCLOCK_READ_*: how tickclock_now() reads */
  int src_is_unit;                   /* the source's ticks are unit ticks (offset only) */
  uint64_t src_base;                 /* the source's reading at base_ticks */
  tickclock_conv src_conv;           /* the source's own ticks <-> ns */
  unsigned generation;               /* 1 for the first published state, +1 each */
  uint64_t unit_hz_num, unit_hz_den; /* the rate of the ticks tickclock_now()
                               hands out (the unit's, the first state's source):
                               ticks / unit_hz is seconds, whatever source reads
                               now; == hz while the source is the unit's */
  double unit_hz;
  const struct tickclock_info *prev; /* the state this one replaced; ticks
                               below base_ticks convert with it, so what an
                               earlier tick means never changes */
  /* Internal: a jump back through prev over the states whose generations
   * lie between skip's (exclusive) and this one's (inclusive), the lowest
   * base_ticks among them in skip_min_base: an old tick finds its state
   * in O(log n) steps. */
  const struct tickclock_info *skip;
  uint64_t skip_min_base;
  /* Internal (read by tickclock_duration_get; not API): this state's
   * start as a publication. tkc_cont_bound_ns bounds the step between
   * what the state it replaced would have read and this one's base: 0 for
   * the first state and for a same-counter republication (exactly
   * continuous at its base), the measured gap for a switch, the
   * extrapolation's allowance for a bounded one (tkc_bounded_switch: away
   * from a counter that was distrusted or could not be read).
   * tkc_susp_ns: the time suspended since boot seen at publication
   * (UINT64_MAX: unknown). */
  uint64_t tkc_cont_bound_ns;
  int tkc_bounded_switch;
  uint64_t tkc_susp_ns;
} tickclock_info;

#endif /* TICKCLOCK_INFO_H */
