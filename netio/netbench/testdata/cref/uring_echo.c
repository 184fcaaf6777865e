// uring_echo: a single-threaded io_uring echo server in C (liburing), the
// yardstick for iopath's io_uring engine (scripts/net-cref.sh,
// docs/net.md), written as liburing's documentation suggests: a ring with
// SINGLE_ISSUER and DEFER_TASKRUN and a registered ring fd, a multishot
// ACCEPT, a multishot RECV per connection (a bundle RECV by default) into
// a ring of provided buffers, and one SENDMSG at a time per connection
// straight from those buffers, which go back to the ring when sent. It has
// no backpressure beyond the buffers running out (a RECV that ends with
// ENOBUFS is armed again once some come back): it is a yardstick for
// peers that read their echoes, not a server to expose.
//
// Usage: uring_echo PORT [BUFSIZE [NBUFS [BUNDLE]]]
//   PORT 0: any (the port is printed); BUFSIZE bytes per provided buffer
//   (4096); NBUFS buffers, a power of two up to 32768 (4096); BUNDLE 1 for
//   bundle RECVs, 0 for one buffer per receive (1).
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif

#define MAXFD 65536
#define MAXIOV 64
enum { OP_ACCEPT = 1, OP_RECV, OP_SEND };

struct conn {
	int head, tail; // queued buffer ids, -1 none
	int recv;       // multishot RECV armed
	int sending;
	int needrecv; // re-arm when buffers are back
	int eof;
	int open;
	struct msghdr msg;
	struct iovec *iov;
};

static struct conn conns[MAXFD];
static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufmem;
static int bufsize = 4096, nbufs = 4096, bundle = 1;
static unsigned short *ringbid; // ring position -> bid
static unsigned short *ringpos; // bid -> ring position
static unsigned short brpos;    // next position to fill
static int *segoff, *segend, *segnext;
static int *freebufs, nfree;
static int *dirty, ndirty;
static int *rearm, nrearm;
static int ls;

static inline __u64 ud(int op, int fd) { return (__u64)op | (__u64)fd << 8; }

static struct io_uring_sqe *getsqe(void) {
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	if (!s) {
		io_uring_submit(&ring);
		s = io_uring_get_sqe(&ring);
	}
	return s;
}

static void armrecv(int fd) {
	struct io_uring_sqe *s = getsqe();
	io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 0;
	if (bundle)
		s->ioprio |= IORING_RECVSEND_BUNDLE;
	s->user_data = ud(OP_RECV, fd);
	conns[fd].recv = 1;
}

static void recycle(int bid) { freebufs[nfree++] = bid; }

static void refill(void) {
	if (!nfree)
		return;
	int mask = io_uring_buf_ring_mask(nbufs);
	for (int i = 0; i < nfree; i++) {
		int bid = freebufs[nfree - 1 - i];
		ringbid[brpos] = bid;
		ringpos[bid] = brpos;
		io_uring_buf_ring_add(br, bufmem + (size_t)bid * bufsize, bufsize, bid, mask, i);
		brpos++;
	}
	io_uring_buf_ring_advance(br, nfree);
	nfree = 0;
}

// drop gives back the buffers a connection holds unsent.
static void drop(struct conn *c) {
	for (int b = c->head; b >= 0;) {
		int n = segnext[b];
		recycle(b);
		b = n;
	}
	c->head = c->tail = -1;
}

// maybeclose closes a connection whose peer has closed (or failed) once
// nothing of it is in flight and all it sent is echoed: the close sends
// our FIN after the data.
static void maybeclose(int fd) {
	struct conn *c = &conns[fd];
	if (!c->open || !c->eof || c->recv || c->sending || c->head >= 0)
		return;
	c->open = 0;
	close(fd);
}

static void onrecv(int fd, struct io_uring_cqe *cqe) {
	struct conn *c = &conns[fd];
	int res = cqe->res;
	if (!(cqe->flags & IORING_CQE_F_MORE))
		c->recv = 0;
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		unsigned short p = ringpos[bid];
		for (int rest = res > 0 ? res : 1; rest > 0; rest -= bufsize) {
			int id = ringbid[p++];
			if (res <= 0 || c->eof) {
				recycle(id);
				continue;
			}
			segoff[id] = 0;
			segend[id] = rest < bufsize ? rest : bufsize;
			segnext[id] = -1;
			if (c->tail >= 0)
				segnext[c->tail] = id;
			else
				c->head = id;
			c->tail = id;
		}
		if (res > 0 && !c->sending)
			dirty[ndirty++] = fd;
	}
	if (c->recv)
		return;
	if (res == -ENOBUFS) {
		if (!c->needrecv) {
			c->needrecv = 1;
			rearm[nrearm++] = fd;
		}
		return;
	}
	if (res > 0) {
		armrecv(fd);
		return;
	}
	c->eof = 1;
	maybeclose(fd);
}

static void startsend(int fd) {
	struct conn *c = &conns[fd];
	if (c->sending || c->head < 0 || !c->open)
		return;
	int n = 0;
	for (int b = c->head; b >= 0 && n < MAXIOV; b = segnext[b], n++) {
		c->iov[n].iov_base = bufmem + (size_t)b * bufsize + segoff[b];
		c->iov[n].iov_len = segend[b] - segoff[b];
	}
	memset(&c->msg, 0, sizeof c->msg);
	c->msg.msg_iov = c->iov;
	c->msg.msg_iovlen = n;
	struct io_uring_sqe *s = getsqe();
	io_uring_prep_sendmsg(s, fd, &c->msg, MSG_NOSIGNAL | MSG_WAITALL);
	s->user_data = ud(OP_SEND, fd);
	c->sending = 1;
}

static void onsend(int fd, struct io_uring_cqe *cqe) {
	struct conn *c = &conns[fd];
	c->sending = 0;
	int res = cqe->res;
	if (res < 0) {
		c->eof = 1; // the peer is gone: what it sent cannot be echoed
		drop(c);
		maybeclose(fd);
		return;
	}
	while (res > 0 && c->head >= 0) {
		int b = c->head, rest = segend[b] - segoff[b];
		if (res < rest) {
			segoff[b] += res;
			break;
		}
		res -= rest;
		c->head = segnext[b];
		if (c->head < 0)
			c->tail = -1;
		recycle(b);
	}
	if (c->head >= 0)
		dirty[ndirty++] = fd;
	else
		maybeclose(fd);
}

static void onaccept(struct io_uring_cqe *cqe) {
	int fd = cqe->res;
	if (!(cqe->flags & IORING_CQE_F_MORE)) {
		struct io_uring_sqe *s = getsqe();
		io_uring_prep_multishot_accept(s, ls, NULL, NULL, 0);
		s->user_data = ud(OP_ACCEPT, 0);
	}
	if (fd < 0)
		return;
	if (fd >= MAXFD) {
		close(fd);
		return;
	}
	struct conn *c = &conns[fd];
	if (!c->iov)
		c->iov = malloc(MAXIOV * sizeof(struct iovec));
	c->head = c->tail = -1;
	c->recv = c->sending = c->needrecv = c->eof = 0;
	c->open = 1;
	armrecv(fd);
}

int main(int argc, char **argv) {
	if (argc < 2 || argc > 5) {
		fprintf(stderr, "usage: uring_echo PORT [BUFSIZE [NBUFS [BUNDLE]]]\n");
		return 2;
	}
	if (argc > 2)
		bufsize = atoi(argv[2]);
	if (argc > 3)
		nbufs = atoi(argv[3]);
	if (argc > 4)
		bundle = atoi(argv[4]);
	if (bufsize < 1 || nbufs < 1 || nbufs > 32768 || (nbufs & (nbufs - 1))) {
		fprintf(stderr, "uring_echo: %d buffers of %d bytes: want BUFSIZE 1 or more and NBUFS a power of two up to 32768\n", nbufs, bufsize);
		return 2;
	}
	int one = 1;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(ls, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); // accepted sockets inherit it
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096) || getsockname(ls, (void *)&a, &alen)) {
		fprintf(stderr, "uring_echo: 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	struct io_uring_params p = {0};
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE;
	p.cq_entries = 32768;
	int r = io_uring_queue_init_params(4096, &ring, &p);
	if (r) {
		fprintf(stderr, "uring_echo: io_uring_queue_init: %s\n", strerror(-r));
		return 1;
	}
	io_uring_register_ring_fd(&ring);
	if (posix_memalign((void **)&br, 4096, nbufs * sizeof(struct io_uring_buf)) ||
	    posix_memalign((void **)&bufmem, 4096, (size_t)nbufs * bufsize)) {
		fprintf(stderr, "uring_echo: %d buffers of %d bytes: out of memory\n", nbufs, bufsize);
		return 1;
	}
	memset(bufmem, 0, (size_t)nbufs * bufsize);
	io_uring_buf_ring_init(br);
	struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = nbufs, .bgid = 0};
	r = io_uring_register_buf_ring(&ring, &reg, 0);
	if (r) {
		fprintf(stderr, "uring_echo: io_uring_register_buf_ring: %s\n", strerror(-r));
		return 1;
	}
	ringbid = calloc(65536, sizeof *ringbid);
	ringpos = calloc(65536, sizeof *ringpos);
	segoff = calloc(nbufs, sizeof(int));
	segend = calloc(nbufs, sizeof(int));
	segnext = calloc(nbufs, sizeof(int));
	freebufs = calloc(nbufs, sizeof(int));
	dirty = calloc(4 * MAXFD, sizeof(int));
	rearm = calloc(MAXFD, sizeof(int));
	for (int i = 0; i < nbufs; i++)
		recycle(nbufs - 1 - i);
	refill();
	struct io_uring_sqe *s = getsqe();
	io_uring_prep_multishot_accept(s, ls, NULL, NULL, 0);
	s->user_data = ud(OP_ACCEPT, 0);
	printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
	fflush(stdout);
	for (;;) {
		r = io_uring_submit_and_wait(&ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
			fprintf(stderr, "uring_echo: io_uring_submit_and_wait: %s\n", strerror(-r));
			return 1;
		}
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			int op = cqe->user_data & 0xff, fd = cqe->user_data >> 8;
			switch (op) {
			case OP_ACCEPT:
				onaccept(cqe);
				break;
			case OP_RECV:
				onrecv(fd, cqe);
				break;
			case OP_SEND:
				onsend(fd, cqe);
				break;
			}
			n++;
		}
		io_uring_cq_advance(&ring, n);
		for (int i = 0; i < ndirty; i++)
			startsend(dirty[i]);
		ndirty = 0;
		refill();
		for (int i = 0; i < nrearm; i++) {
			int fd = rearm[i];
			conns[fd].needrecv = 0;
			if (conns[fd].open && !conns[fd].eof && !conns[fd].recv)
				armrecv(fd);
		}
		nrearm = 0;
	}
}
