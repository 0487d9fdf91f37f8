/*
 * s3_answer.c - the pieces every S3 handler's answer shares: the head of an
 * XML answer document and the early answer of a refused request.  Any
 * thread.
 */
#include "srv.h"

void strata_xml_doc_head(struct strata_sbuf *b, const char *root)
{
    strata_sbuf_printf(b,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<%s xmlns=\"" STRATA_S3_XMLNS "\">",
                       root);
}

void strata_xml_doc_open(struct strata_sbuf *b, size_t max, const char *root)
{
    strata_sbuf_init(b, max);
    strata_xml_doc_head(b, root);
}

void strata_xml_doc_send(struct strata_req *r, struct strata_sbuf *b, const char *root)
{
    strata_sbuf_printf(b, "</%s>", root);
    strata_req_send_xml(r, 200, b);
}

bool strata_req_refused(struct strata_req *r, enum s3_err e)
{
    if (e == S3E_NONE)
        return false;
    strata_req_error(r, e, 0);
    return true;
}
