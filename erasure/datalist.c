/*
 * datalist.c - which data ids have shard files on a set's drives, for the
 * scanner's orphan reclaim (meta/orphan.c decides what is unreferenced).
 * Only files named exactly as shard files (data/<hh>/<32 hex>) count;
 * anything else under data/ is left alone, and so are the <hh>/
 * directories (a writer may be renaming into one right now).
 */
#include "strata/erasure.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool parse_id(const char *name, const char *hh, uint8_t id[STRATA_DATA_ID_LEN])
{
    if (strlen(name) != 2 * STRATA_DATA_ID_LEN || strncmp(name, hh, 2) != 0)
        return false;
    for (int i = 0; i < 2 * STRATA_DATA_ID_LEN; i += 2) {
        int a = hexval(name[i]), b = hexval(name[i + 1]);
        if (a < 0 || b < 0)
            return false;
        id[i / 2] = (uint8_t)(a << 4 | b);
    }
    return true;
}

int strata_ec_data_list(struct strata_set *set, unsigned age_s,
                        int (*cb)(const uint8_t id[STRATA_DATA_ID_LEN], void *ud), void *ud)
{
    time_t now = time(NULL);
    for (unsigned d = 0; d < strata_set_n(set); d++) {
        if (!strata_set_drive_online(set, d))
            continue;
        char p[4096];
        snprintf(p, sizeof(p), "%s/data", strata_set_drive_path(set, d));
        DIR *top = opendir(p);
        if (!top)
            continue;
        struct dirent *he;
        int rc = 0;
        while (rc == 0 && (he = readdir(top))) {
            if (strlen(he->d_name) != 2 || hexval(he->d_name[0]) < 0 || hexval(he->d_name[1]) < 0)
                continue;
            int fd = openat(dirfd(top), he->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (fd < 0)
                continue;
            DIR *sub = fdopendir(fd);
            if (!sub) {
                close(fd);
                continue;
            }
            struct dirent *de;
            while (rc == 0 && (de = readdir(sub))) {
                uint8_t id[STRATA_DATA_ID_LEN];
                struct stat sb;
                if (!parse_id(de->d_name, he->d_name, id) ||
                    fstatat(dirfd(sub), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(sb.st_mode) || now - sb.st_mtime < (time_t)age_s)
                    continue;
                rc = cb(id, ud);
            }
            closedir(sub);
        }
        closedir(top);
        if (rc)
            return rc;
    }
    return 0;
}
