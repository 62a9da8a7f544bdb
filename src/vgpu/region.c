/*
 * vgpu/region.c: the shared accounting file of a slice (see region.h).
 *
 * Model. Each process of a slice owns one slot and adds the bytes it reserves to its own
 * counters; the slice's usage of a device is the sum over the slots [0, high_water). To reserve
 * n bytes a process publishes first and checks after:
 *
 *     fetch_add(my.used[dev], n)            (sequentially consistent)
 *     if sum(used[dev]) <= cap: done        (the sum includes my n)
 *     fetch_sub(my.used[dev], n)            (undo, then OOM or retry)
 *
 * Two processes racing for the last bytes both publish before they sum, so in the single order
 * of sequentially consistent operations at least one of them sees the other's n: the cap is never
 * passed. Both may see each other and both back off; the loop then retries while the refusal
 * came from reservations still in flight, and refuses only when the bytes really are taken.
 * No lock is taken on this path, and a process killed at any point leaves only its own slot
 * wrong, which is exactly what reclaiming it clears.
 *
 * Slot states (owner word = state << 32 | pid):
 *
 *           claim_slot (CAS)            claim_slot (store)
 *     FREE ------------------> CLAIMING ------------------> LIVE
 *      ^                          |                          |
 *      |                          | owner dead               | owner dead (no /proc entry,
 *      |                          v                          v  zombie, or pid reused)
 *      +------------------- RECLAIMING <---------------------+
 *        reclaim (store)      (CAS by fatia_vgpu_region_reclaim; if the reclaimer dies here,
 *                              its own death makes the slot reclaimable again)
 *
 * Invariants: a slot's index never changes while its owner lives (no compaction, so no stale
 * index can point at another process's counters); high_water only grows and is raised before a
 * slot's counters can become non-zero; only the owner writes its counters, except a reclaimer,
 * which writes them only once the owner is dead.
 *
 * Liveness uses pid + start time read from /proc, which holds within one PID namespace: every
 * process of a slice runs in one pod, so one namespace. A zombie counts as dead because the
 * kernel closed its files, and with them the driver's memory, before it became one.
 *
 * Rejected: a global counter updated by CAS (a process killed between the global update and its
 * own bookkeeping leaves bytes nobody can attribute); a process-shared mutex (robust mutexes
 * recover from a dead holder but still serialize every allocation of the slice); HAMi's
 * semaphore with timeouts that end in exit(); compaction of dead slots (HAMi-core#191).
 */
#include "base/compat.h"

#include "vgpu/region.h"

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

_Static_assert(sizeof(struct fatia_vgpu_region_header) == 4096, "header is one page");
_Static_assert(sizeof(struct fatia_vgpu_slot) == 192, "slot layout is part of the file format");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "lock-free 64-bit atomics");

#define OWNER(state, pid) (((uint64_t)(state) << 32) | (uint32_t)(pid))
#define OWNER_STATE(o)    ((uint32_t)((o) >> 32))
#define OWNER_PID(o)      ((int)(uint32_t)(o))

FATIA_PRINTF(3, 4) static void set_why(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    if (!why || !n)
        return;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

int fatia_vgpu_proc_stat(int pid, char *ret_state, uint64_t *ret_start)
{
    char path[64], buf[1024];
    const char *p;
    ssize_t n;
    int fd, field;
    uint64_t start = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n < 0 ? -errno : -ENOENT;
    buf[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so take the last ')'. */
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -EPROTO;
    *ret_state = p[2];
    /* p[2] is field 3; the start time is field 22. */
    p += 2;
    for (field = 3; field < 22 && *p; p++) {
        if (*p == ' ')
            field++;
    }
    if (field != 22)
        return -EPROTO;
    for (; *p >= '0' && *p <= '9'; p++)
        start = start * 10 + (uint64_t)(*p - '0');
    *ret_start = start;
    return 0;
}

static bool owner_dead(uint64_t owner, uint64_t start_time);

static void init_header(struct fatia_vgpu_region_header *h, const uint64_t limit[])
{
    memset(h, 0, sizeof(*h));
    h->version = FATIA_VGPU_REGION_VERSION;
    h->header_size = sizeof(*h);
    h->slot_size = sizeof(struct fatia_vgpu_slot);
    h->n_slots = FATIA_VGPU_MAX_SLOTS;
    h->n_devices = FATIA_VGPU_MAX_DEVICES;
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        h->limit[i] = limit ? limit[i] : FATIA_VGPU_NO_LIMIT;
}

static bool header_matches(const struct fatia_vgpu_region_header *h)
{
    return h->version == FATIA_VGPU_REGION_VERSION && h->header_size == sizeof(*h) &&
           h->slot_size == sizeof(struct fatia_vgpu_slot) && h->n_slots == FATIA_VGPU_MAX_SLOTS &&
           h->n_devices == FATIA_VGPU_MAX_DEVICES;
}

static void attach(struct fatia_vgpu_region *r, void *map, const uint64_t limit[])
{
    struct fatia_vgpu_region_map *m = map;

    r->hdr = &m->hdr;
    r->slots = m->slots;
    pthread_mutex_init(&r->claim_lock, NULL);
    r->map_size = FATIA_VGPU_REGION_SIZE;
    atomic_store(&r->my_slot, -1);
    atomic_store(&r->my_owner, 0);
    r->limits_differ = false;
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++) {
        r->limit[i] = r->hdr->limit[i];
        if (limit && limit[i] != r->limit[i])
            r->limits_differ = true;
        atomic_store(&r->local_used[i], 0);
    }
}

/* Maps the file open at fd, initializing it when empty or never finished. Called under flock. */
static int map_file(struct fatia_vgpu_region *r, int fd, const char *path, const uint64_t limit[],
                    bool reinit, char *why, size_t why_len)
{
    struct stat st;
    void *map;
    bool fresh;

    if (fstat(fd, &st) < 0) {
        set_why(why, why_len, "cannot stat '%s': errno %d", path, errno);
        return -errno;
    }
    if (st.st_size != 0 && st.st_size != (off_t)FATIA_VGPU_REGION_SIZE) {
        set_why(why, why_len, "'%s' is not a fatia-vgpu accounting file (size %d)", path,
                (int)st.st_size);
        return -EPROTO;
    }
    if (st.st_size == 0 && r->read_only) {
        set_why(why, why_len, "'%s' is not initialized (errno %d)", path, ENODATA);
        return -ENODATA;
    }
    if (st.st_size == 0 && ftruncate(fd, (off_t)FATIA_VGPU_REGION_SIZE) < 0) {
        set_why(why, why_len, "cannot size '%s': errno %d", path, errno);
        return -errno;
    }
    map = mmap(NULL, FATIA_VGPU_REGION_SIZE, r->read_only ? PROT_READ : PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        set_why(why, why_len, "cannot map '%s': errno %d", path, errno);
        return -errno;
    }
    fresh = atomic_load(&((struct fatia_vgpu_region_header *)map)->magic) == 0;
    if (!fresh &&
        atomic_load(&((struct fatia_vgpu_region_header *)map)->magic) != FATIA_VGPU_REGION_MAGIC) {
        munmap(map, FATIA_VGPU_REGION_SIZE);
        set_why(why, why_len, "'%s' is not a fatia-vgpu accounting file (bad magic)", path);
        return -EPROTO;
    }
    if (!fresh && !header_matches(map)) {
        int version = (int)((struct fatia_vgpu_region_header *)map)->version;

        munmap(map, FATIA_VGPU_REGION_SIZE);
        set_why(why, why_len, "'%s' has another layout (version %d)", path, version);
        return -EPROTO;
    }
    if (reinit && !fresh) {
        struct fatia_vgpu_region_header *h = map;
        uint32_t hw = atomic_load(&h->high_water);

        for (uint32_t i = 0; i < hw && i < FATIA_VGPU_MAX_SLOTS; i++) {
            struct fatia_vgpu_slot *s = &((struct fatia_vgpu_region_map *)map)->slots[i];
            uint64_t o = atomic_load(&s->owner);

            if (o != 0 && !owner_dead(o, atomic_load(&s->start_time))) {
                munmap(map, FATIA_VGPU_REGION_SIZE);
                set_why(why, why_len, "'%s' is in use by a process (slot %d)", path, (int)i);
                return -EBUSY;
            }
        }
        fresh = true;
    }
    if (fresh) {
        if (r->read_only) {
            munmap(map, FATIA_VGPU_REGION_SIZE);
            set_why(why, why_len, "'%s' is not initialized (errno %d)", path, ENODATA);
            return -ENODATA;
        }
        memset((char *)map + sizeof(struct fatia_vgpu_region_header), 0,
               FATIA_VGPU_MAX_SLOTS * sizeof(struct fatia_vgpu_slot));
        init_header(map, limit);
        atomic_store(&((struct fatia_vgpu_region_header *)map)->magic, FATIA_VGPU_REGION_MAGIC);
    }
    attach(r, map, limit);
    return 0;
}

static int open_file(struct fatia_vgpu_region *r, const char *path, const uint64_t limit[],
                     bool reinit, char *why, size_t why_len)
{
    int fd, ret;

    fd = r->read_only ? open(path, O_RDONLY | O_CLOEXEC)
                      : open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
    if (fd < 0) {
        ret = -errno;
        set_why(why, why_len, "cannot open '%s': errno %d", path, errno);
        return ret;
    }
    /* The lock serializes initialization only; the mapped counters need none. */
    if (flock(fd, r->read_only ? LOCK_SH : LOCK_EX) < 0) {
        ret = -errno;
        set_why(why, why_len, "cannot lock '%s': errno %d", path, errno);
        close(fd);
        return ret;
    }
    ret = map_file(r, fd, path, limit, reinit, why, why_len);
    /* Unlock explicitly: the mapping keeps the open file description, and with it the lock,
     * alive after close(). */
    flock(fd, LOCK_UN);
    close(fd);
    return ret;
}

int fatia_vgpu_region_open(struct fatia_vgpu_region *r, const char *path,
                           const uint64_t limit[FATIA_VGPU_MAX_DEVICES], unsigned flags, char *why,
                           size_t why_len)
{
    void *map;

    memset(r, 0, sizeof(*r));
    r->read_only = flags & FATIA_VGPU_REGION_READ_ONLY;
    if (path && path[0])
        return open_file(r, path, limit, false, why, why_len);
    if (r->read_only)
        return -EINVAL;
    /* Accounting alone: private anonymous memory, which a fork() child gets a copy of. */
    map = mmap(NULL, FATIA_VGPU_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (map == MAP_FAILED) {
        set_why(why, why_len, "cannot map anonymous memory: errno %d", errno);
        return -errno;
    }
    init_header(map, limit);
    atomic_store(&((struct fatia_vgpu_region_header *)map)->magic, FATIA_VGPU_REGION_MAGIC);
    attach(r, map, limit);
    r->anonymous = true;
    return 0;
}

int fatia_vgpu_region_create(const char *path, const uint64_t limit[FATIA_VGPU_MAX_DEVICES],
                             char *why, size_t why_len)
{
    struct fatia_vgpu_region r;
    int ret;

    memset(&r, 0, sizeof(r));
    if (!path || path[0] != '/')
        return -EINVAL;
    ret = open_file(&r, path, limit, true, why, why_len);
    if (ret == 0)
        fatia_vgpu_region_close(&r);
    return ret;
}

void fatia_vgpu_region_close(struct fatia_vgpu_region *r)
{
    if (r->hdr) {
        munmap(r->hdr, r->map_size);
        pthread_mutex_destroy(&r->claim_lock);
    }
    r->hdr = NULL;
    r->slots = NULL;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t fatia_vgpu_region_used(const struct fatia_vgpu_region *r, int dev)
{
    uint32_t hw;
    uint64_t total = 0;

    if (!r->hdr || dev < 0 || dev >= FATIA_VGPU_MAX_DEVICES)
        return 0;
    hw = atomic_load(&r->hdr->high_water);
    if (hw > FATIA_VGPU_MAX_SLOTS)
        hw = FATIA_VGPU_MAX_SLOTS;
    for (uint32_t i = 0; i < hw; i++)
        total = sat_add(total, atomic_load(&r->slots[i].used[dev]));
    return total;
}

int fatia_vgpu_region_live_slots(const struct fatia_vgpu_region *r)
{
    uint32_t hw = atomic_load(&r->hdr->high_water);
    int n = 0;

    for (uint32_t i = 0; i < hw && i < FATIA_VGPU_MAX_SLOTS; i++)
        n += OWNER_STATE(atomic_load(&r->slots[i].owner)) == FATIA_VGPU_SLOT_LIVE;
    return n;
}

static bool owner_dead(uint64_t owner, uint64_t start_time)
{
    char state;
    uint64_t start;
    int r = fatia_vgpu_proc_stat(OWNER_PID(owner), &state, &start);

    if (r == -ENOENT || r == -ESRCH)
        return true;
    if (r < 0)
        return false; /* cannot tell: keep the slot */
    if (state == 'Z' || state == 'X' || state == 'x')
        return true;
    return OWNER_STATE(owner) == FATIA_VGPU_SLOT_LIVE && start_time && start != start_time;
}

int fatia_vgpu_region_reclaim(struct fatia_vgpu_region *r)
{
    uint32_t hw;
    int mine = atomic_load(&r->my_slot);
    int freed = 0;
    int me = (int)getpid();

    if (!r->hdr || r->read_only)
        return 0;
    hw = atomic_load(&r->hdr->high_water);
    for (uint32_t i = 0; i < hw && i < FATIA_VGPU_MAX_SLOTS; i++) {
        struct fatia_vgpu_slot *s = &r->slots[i];
        uint64_t o = atomic_load(&s->owner);

        if (OWNER_STATE(o) == FATIA_VGPU_SLOT_FREE || (int)i == mine)
            continue;
        if (OWNER_PID(o) == me && OWNER_STATE(o) != FATIA_VGPU_SLOT_LIVE)
            continue;
        if (!owner_dead(o, atomic_load(&s->start_time)))
            continue;
        if (!atomic_compare_exchange_strong(&s->owner, &o, OWNER(FATIA_VGPU_SLOT_RECLAIMING, me)))
            continue;
        for (int d = 0; d < FATIA_VGPU_MAX_DEVICES; d++)
            atomic_store(&s->used[d], 0);
        atomic_store(&s->start_time, 0);
        atomic_store(&s->owner, OWNER(FATIA_VGPU_SLOT_FREE, 0));
        atomic_fetch_add(&r->hdr->n_reclaimed, 1);
        freed++;
    }
    return freed;
}

static void raise_high_water(struct fatia_vgpu_region *r, uint32_t n)
{
    uint32_t hw = atomic_load(&r->hdr->high_water);

    while (hw < n && !atomic_compare_exchange_weak(&r->hdr->high_water, &hw, n))
        ;
}

static int claim_slot(struct fatia_vgpu_region *r)
{
    int me = (int)getpid();
    uint64_t start = 0;
    char state;

    (void)fatia_vgpu_proc_stat(me, &state, &start);
    /* A process joining the slice first clears what dead ones left, so that the usage every
     * process reports is current from its first query. */
    fatia_vgpu_region_reclaim(r);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < FATIA_VGPU_MAX_SLOTS; i++) {
            struct fatia_vgpu_slot *s = &r->slots[i];
            uint64_t o = OWNER(FATIA_VGPU_SLOT_FREE, 0);

            if (atomic_load(&s->owner) != o)
                continue;
            if (!atomic_compare_exchange_strong(&s->owner, &o, OWNER(FATIA_VGPU_SLOT_CLAIMING, me)))
                continue;
            /* Visible to every summer before any of its counters can be non-zero. */
            raise_high_water(r, (uint32_t)i + 1);
            atomic_store(&s->start_time, start);
            for (int d = 0; d < FATIA_VGPU_MAX_DEVICES; d++)
                atomic_store(&s->used[d], 0);
            atomic_store(&r->my_owner, OWNER(FATIA_VGPU_SLOT_LIVE, me));
            atomic_store(&s->owner, atomic_load(&r->my_owner));
            atomic_store(&r->my_slot, i);
            return i;
        }
        if (fatia_vgpu_region_reclaim(r) == 0)
            break;
    }
    return -ENOSPC;
}

/* This process's slot, claimed on first use (by one thread: the others wait for it). If another
 * process took it (it judged us dead: processes of one slice in different PID namespaces), claim
 * a new one and restore our bytes. */
static struct fatia_vgpu_slot *my_slot(struct fatia_vgpu_region *r)
{
    int i = atomic_load(&r->my_slot);
    struct fatia_vgpu_slot *s = NULL;

    if (i >= 0 && atomic_load_explicit(&r->slots[i].owner, memory_order_relaxed) ==
                      atomic_load_explicit(&r->my_owner, memory_order_relaxed))
        return &r->slots[i];
    pthread_mutex_lock(&r->claim_lock);
    i = atomic_load(&r->my_slot);
    if (i >= 0 && atomic_load(&r->slots[i].owner) == atomic_load(&r->my_owner)) {
        s = &r->slots[i]; /* another thread claimed it meanwhile */
    } else {
        bool stolen = i >= 0;

        atomic_store(&r->my_slot, -1);
        i = claim_slot(r);
        if (i >= 0) {
            s = &r->slots[i];
            for (int d = 0; stolen && d < FATIA_VGPU_MAX_DEVICES; d++)
                atomic_store(&s->used[d], atomic_load(&r->local_used[d]));
        }
    }
    pthread_mutex_unlock(&r->claim_lock);
    return s;
}

int fatia_vgpu_region_reserve(struct fatia_vgpu_region *r, int dev, uint64_t n)
{
    struct fatia_vgpu_slot *s;
    uint64_t limit, total;
    bool reclaimed = false;

    if (dev < 0 || dev >= FATIA_VGPU_MAX_DEVICES || !r->hdr)
        return 0;
    limit = r->limit[dev];
    if (limit == FATIA_VGPU_NO_LIMIT || n == 0)
        return 0;
    if (r->read_only || n > limit)
        goto refuse;
    s = my_slot(r);
    if (!s)
        goto refuse;
    for (int attempt = 0; attempt < 64; attempt++) {
        atomic_fetch_add(&s->used[dev], n);
        total = fatia_vgpu_region_used(r, dev);
        if (total <= limit) {
            atomic_fetch_add(&r->local_used[dev], n);
            return 0;
        }
        atomic_fetch_sub(&s->used[dev], n);
        total = fatia_vgpu_region_used(r, dev);
        if (total > limit - n) {
            /* Really taken, unless by processes that are gone. */
            if (reclaimed || fatia_vgpu_region_reclaim(r) == 0)
                goto refuse;
            reclaimed = true;
            continue;
        }
        /* The bytes are there: the refusal came from another reservation in flight. */
        if (attempt >= 4)
            sched_yield();
    }
refuse:
    if (!r->read_only)
        atomic_fetch_add(&r->hdr->n_refused, 1);
    return -ENOMEM;
}

static void sub_floor(_Atomic uint64_t *v, uint64_t n)
{
    uint64_t cur = atomic_load(v);

    while (!atomic_compare_exchange_weak(v, &cur, cur >= n ? cur - n : 0))
        ;
}

void fatia_vgpu_region_release(struct fatia_vgpu_region *r, int dev, uint64_t n)
{
    int i;

    if (dev < 0 || dev >= FATIA_VGPU_MAX_DEVICES || !r->hdr || n == 0)
        return;
    if (r->limit[dev] == FATIA_VGPU_NO_LIMIT)
        return;
    i = atomic_load(&r->my_slot);
    sub_floor(&r->local_used[dev], n);
    if (i < 0 || atomic_load(&r->slots[i].owner) != atomic_load(&r->my_owner))
        return;
    sub_floor(&r->slots[i].used[dev], n);
}

void fatia_vgpu_region_after_fork(struct fatia_vgpu_region *r)
{
    if (r->anonymous && r->hdr) {
        memset(r->slots, 0, FATIA_VGPU_MAX_SLOTS * sizeof(struct fatia_vgpu_slot));
        atomic_store(&r->hdr->high_water, 0);
    }
    atomic_store(&r->my_slot, -1);
    atomic_store(&r->my_owner, 0);
    pthread_mutex_init(&r->claim_lock, NULL); /* a parent's thread may have held it */
    for (int d = 0; d < FATIA_VGPU_MAX_DEVICES; d++)
        atomic_store(&r->local_used[d], 0);
}
