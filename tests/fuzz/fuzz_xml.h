/*
 * fuzz_xml.h - what the XML body targets (fuzz_*_xml.c) share: libxml2
 * set up once, as main() does in the daemon, with its generic error
 * messages silenced, so a replay log shows findings only.
 */
#ifndef STRATA_TESTS_FUZZ_FUZZ_XML_H
#define STRATA_TESTS_FUZZ_FUZZ_XML_H

#include <stdbool.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

static inline void strata_fuzz_xml_quiet_cb(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

/* Once per process, before the first parse. */
static inline void strata_fuzz_xml_init(void)
{
    static bool inited;
    if (!inited) {
        xmlInitParser();
        xmlSetGenericErrorFunc(NULL, strata_fuzz_xml_quiet_cb);
        inited = true;
    }
}

#endif /* STRATA_TESTS_FUZZ_FUZZ_XML_H */
