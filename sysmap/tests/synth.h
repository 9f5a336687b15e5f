/* synth: synthetic collector reports for the database tests and benchmark.
 *
 * Host i gets hardware profile i % nprofiles. Every extractor value depends
 * only on the profile, so nprofiles * SYNTH_EXTRACTORS distinct values exist
 * however many hosts there are: the number the data table must hold. */
#ifndef SYSMAP_SYNTH_H
#define SYSMAP_SYNTH_H

#include <stddef.h>

#define SYNTH_EXTRACTORS 7

/* The report of host name for profile (JSON text, malloc'd). */
char *synth_report(const char *host, size_t profile);

/* The available bytes on /local that profile reports. */
long long synth_local_bytes(size_t profile);

#endif
