// SPDX-License-Identifier: GPL-2.0
/* A stand-in verbs provider for hosts without RDMA hardware. It exports the control-path
 * entry points of libibverbs (ibv_open_device, ibv_create_cq, ...) under the same names
 * and symbol versions, and fills a real struct ibv_context whose ops table points at
 * static data-path functions (post_send, post_recv, poll_cq, req_notify_cq) that are not
 * exported: the inline ibv_post_send()/ibv_poll_cq() of verbs.h reach them exactly as they
 * reach libmlx5's. A "fabric" thread completes each work request after the delay the
 * application planned (ttsi_plan), so completions arrive out of order and with errors. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include "standin.h"

#define API __attribute__((visibility("default")))

#define CQ_RING    4096
#define PLAN_SLOTS 8192
#define CHAN_RING  1024

struct si_cq {
	struct ibv_cq cq; /* first: the verbs API hands out &si_cq->cq */
	pthread_mutex_t lock;
	struct ibv_wc ring[CQ_RING];
	unsigned int head, tail; /* ring[head..tail) are ready completions */
	bool armed;
	uint64_t last_event_ns;
};

struct plan {
	uint64_t wr_id;
	uint64_t delay_ns;
	uint32_t status;
	bool used;
};

struct si_qp {
	struct ibv_qp qp;
	struct si_cq *scq, *rcq;
	bool sig_all;
	bool in_order;        /* ttsi_qp_in_order: each queue completes in post order */
	uint64_t last_due[2]; /* send, receive queue: due time of the newest WR */
	struct plan plans[PLAN_SLOTS];
};

struct si_chan {
	struct ibv_comp_channel ch;
	pthread_mutex_t lock;
	struct si_cq *q[CHAN_RING];
	unsigned int head, tail;
};

struct pending {
	uint64_t due_ns;
	uint64_t seq; /* ties on due_ns go in post order */
	struct si_cq *cq;
	struct ibv_wc wc;
};

struct si_ctx {
	struct ibv_context ctx;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t fabric;
	bool stop;
	struct pending *heap; /* min-heap on due_ns */
	size_t nheap, heap_cap;
	uint32_t next_qpn;
	uint32_t next_cq_handle;
	uint64_t next_seq;
};

static struct ibv_device si_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = "ttsi0",
	.dev_name = "uverbs_ttsi0",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct si_ctx *to_sctx(struct ibv_context *c)
{
	return (struct si_ctx *)c;
}

/* ---- completion delivery ---- */

/* Caller holds nothing; takes the CQ and channel locks. */
static void deliver(struct si_cq *cq, const struct ibv_wc *wc)
{
	struct si_chan *ch = (struct si_chan *)cq->cq.channel;
	bool notify = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->tail - cq->head < CQ_RING) {
		cq->ring[cq->tail % CQ_RING] = *wc;
		cq->tail++;
	}
	/* a CQ overrun loses the completion, as hardware would (the test never overruns) */
	if (cq->armed && ch) {
		cq->armed = false;
		notify = true;
	}
	pthread_mutex_unlock(&cq->lock);
	if (notify) {
		uint64_t one = 1;

		pthread_mutex_lock(&ch->lock);
		if (ch->tail - ch->head < CHAN_RING)
			ch->q[ch->tail++ % CHAN_RING] = cq;
		pthread_mutex_unlock(&ch->lock);
		cq->last_event_ns = now_ns();
		if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
			abort();
	}
}

static bool before(const struct pending *a, const struct pending *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_push(struct si_ctx *c, const struct pending *p)
{
	size_t i;

	if (c->nheap == c->heap_cap) {
		size_t ncap = c->heap_cap ? c->heap_cap * 2 : 1024;
		struct pending *n = realloc(c->heap, ncap * sizeof(*n));

		if (!n)
			abort();
		c->heap = n;
		c->heap_cap = ncap;
	}
	i = c->nheap++;
	while (i && before(p, &c->heap[(i - 1) / 2])) {
		c->heap[i] = c->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	c->heap[i] = *p;
}

static void heap_pop(struct si_ctx *c, struct pending *out)
{
	struct pending last;
	size_t i = 0;

	*out = c->heap[0];
	last = c->heap[--c->nheap];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < c->nheap && before(&c->heap[l], &last))
			m = l;
		if (l + 1 < c->nheap && before(&c->heap[l + 1], m == i ? &last : &c->heap[l]))
			m = l + 1;
		if (m == i)
			break;
		c->heap[i] = c->heap[m];
		i = m;
	}
	c->heap[i] = last;
}

static void *fabric_main(void *arg)
{
	struct si_ctx *c = arg;
	struct pending p;

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		uint64_t t = now_ns();

		if (c->nheap && c->heap[0].due_ns <= t) {
			heap_pop(c, &p);
			pthread_mutex_unlock(&c->lock);
			deliver(p.cq, &p.wc);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (c->nheap) {
			struct timespec ts = { (time_t)(c->heap[0].due_ns / 1000000000ull),
					       (long)(c->heap[0].due_ns % 1000000000ull) };

			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		} else {
			pthread_cond_wait(&c->cond, &c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void schedule(struct si_qp *qp, struct si_cq *cq, uint64_t wr_id, int opcode)
{
	struct si_ctx *c = to_sctx(qp->qp.context);
	struct plan *pl = &qp->plans[wr_id % PLAN_SLOTS];
	struct pending p = { 0 };

	p.cq = cq;
	p.wc.wr_id = wr_id;
	p.wc.qp_num = qp->qp.qp_num;
	p.wc.opcode = opcode;
	p.due_ns = now_ns();
	if (pl->used && pl->wr_id == wr_id) {
		p.due_ns += pl->delay_ns;
		p.wc.status = pl->status;
		pl->used = false;
	}
	if (p.wc.status != IBV_WC_SUCCESS)
		p.wc.opcode = 0x5a5a; /* undefined on errors: tracers must not trust it */
	if (qp->in_order) {
		/* as an RC queue: a WR completes no earlier than the one posted before it */
		uint64_t *last = &qp->last_due[opcode == IBV_WC_RECV];

		if (p.due_ns < *last)
			p.due_ns = *last;
		*last = p.due_ns;
	} else if (p.due_ns <= now_ns()) {
		deliver(cq, &p.wc);
		return;
	}
	pthread_mutex_lock(&c->lock);
	p.seq = c->next_seq++;
	heap_push(c, &p);
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* ---- data path: static, reached only through ctx->ops ---- */

static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static int si_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct si_qp *qp = (struct si_qp *)ibqp;

	for (; wr; wr = wr->next) {
		if (wr->opcode > IBV_WR_SEND_WITH_INV) {
			*bad = wr;
			return EINVAL;
		}
		if (qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
			schedule(qp, qp->scq, wr->wr_id, wc_opcode_of(wr->opcode));
	}
	return 0;
}

static int si_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct si_qp *qp = (struct si_qp *)ibqp;

	(void)bad;
	for (; wr; wr = wr->next)
		schedule(qp, qp->rcq, wr->wr_id, IBV_WC_RECV);
	return 0;
}

static int si_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct si_cq *cq = (struct si_cq *)ibcq;
	int got = 0;

	pthread_mutex_lock(&cq->lock);
	while (got < n && cq->head != cq->tail)
		wc[got++] = cq->ring[cq->head++ % CQ_RING];
	pthread_mutex_unlock(&cq->lock);
	return got;
}

static int si_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct si_cq *cq = (struct si_cq *)ibcq;

	(void)solicited_only;
	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/* ---- control path: exported under libibverbs' names ---- */

API struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **l = calloc(2, sizeof(*l));

	if (!l)
		return NULL;
	l[0] = &si_device;
	if (num)
		*num = 1;
	return l;
}

API void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

API const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev->name;
}

/* The current version; an IBVERBS_1.0 compat entry of the same name sits beside it (as in
 * libibverbs) so symbol lookup has to honour symbol versions. */
API struct ibv_context *si_open_device_v11(struct ibv_device *dev)
{
	struct si_ctx *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	if (!c)
		return NULL;
	c->ctx.device = dev;
	c->ctx.ops.post_send = si_post_send;
	c->ctx.ops.post_recv = si_post_recv;
	c->ctx.ops.poll_cq = si_poll_cq;
	c->ctx.ops.req_notify_cq = si_req_notify_cq;
	c->ctx.cmd_fd = -1;
	c->ctx.async_fd = -1;
	c->ctx.num_comp_vectors = 1;
	c->next_qpn = 0x11;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&c->fabric, NULL, fabric_main, c)) {
		free(c);
		return NULL;
	}
	return &c->ctx;
}
__asm__(".symver si_open_device_v11, ibv_open_device@@IBVERBS_1.1");

API struct ibv_context *si_open_device_v10(struct ibv_device *dev)
{
	(void)dev;
	errno = ENOSYS;
	return NULL;
}
__asm__(".symver si_open_device_v10, ibv_open_device@IBVERBS_1.0");

API int ibv_close_device(struct ibv_context *ctx)
{
	struct si_ctx *c = to_sctx(ctx);

	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->fabric, NULL);
	free(c->heap);
	free(c);
	return 0;
}

API struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (pd)
		pd->context = ctx;
	return pd;
}

API int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

API struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct si_chan *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->ch.context = ctx;
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	pthread_mutex_init(&ch->lock, NULL);
	return &ch->ch;
}

API int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	close(channel->fd);
	free(channel);
	return 0;
}

API struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				 struct ibv_comp_channel *channel, int comp_vector)
{
	struct si_cq *cq = calloc(1, sizeof(*cq));

	(void)comp_vector;
	if (!cq)
		return NULL;
	cq->cq.context = ctx;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = cqe < CQ_RING ? cqe : CQ_RING;
	pthread_mutex_lock(&to_sctx(ctx)->lock);
	cq->cq.handle = ++to_sctx(ctx)->next_cq_handle;
	pthread_mutex_unlock(&to_sctx(ctx)->lock);
	pthread_mutex_init(&cq->lock, NULL);
	return &cq->cq;
}

API int ibv_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	return 0;
}

API struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct si_qp *qp = calloc(1, sizeof(*qp));
	struct si_ctx *c = to_sctx(pd->context);

	if (!qp)
		return NULL;
	qp->qp.context = pd->context;
	qp->qp.pd = pd;
	qp->qp.send_cq = attr->send_cq;
	qp->qp.recv_cq = attr->recv_cq;
	qp->qp.qp_type = attr->qp_type;
	qp->qp.state = IBV_QPS_RESET;
	qp->scq = (struct si_cq *)attr->send_cq;
	qp->rcq = (struct si_cq *)attr->recv_cq;
	qp->sig_all = attr->sq_sig_all;
	pthread_mutex_lock(&c->lock);
	qp->qp.qp_num = c->next_qpn++;
	pthread_mutex_unlock(&c->lock);
	return &qp->qp;
}

API int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

API int ibv_destroy_qp(struct ibv_qp *qp)
{
	free(qp);
	return 0;
}

API int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct si_chan *ch = (struct si_chan *)channel;
	uint64_t v;

	if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	pthread_mutex_lock(&ch->lock);
	if (ch->head == ch->tail) {
		pthread_mutex_unlock(&ch->lock);
		return -1;
	}
	*cq = &ch->q[ch->head++ % CHAN_RING]->cq;
	pthread_mutex_unlock(&ch->lock);
	*cq_context = (*cq)->cq_context;
	return 0;
}

API void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}

/* ---- test control ---- */

API int ttsi_plan(struct ibv_qp *ibqp, uint64_t wr_id, uint64_t delay_ns, enum ibv_wc_status status)
{
	struct si_qp *qp = (struct si_qp *)ibqp;
	struct plan *pl = &qp->plans[wr_id % PLAN_SLOTS];

	if (pl->used)
		return -EBUSY;
	pl->wr_id = wr_id;
	pl->delay_ns = delay_ns;
	pl->status = status;
	pl->used = true;
	return 0;
}

API void ttsi_qp_in_order(struct ibv_qp *ibqp)
{
	((struct si_qp *)ibqp)->in_order = true;
}

API uint64_t ttsi_cq_last_event_ns(struct ibv_cq *cq)
{
	return ((struct si_cq *)cq)->last_event_ns;
}
