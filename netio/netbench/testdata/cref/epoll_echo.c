// epoll_echo: a single-threaded, edge-triggered epoll echo server in C, the
// yardstick for iopath's epoll engine (scripts/net-cref.sh, docs/net.md).
// Each readable connection is read until the socket is empty, each read
// into one buffer and sent back at once; what a full socket does not take
// waits in a buffer of the connection's own, and reading stops until
// EPOLLOUT says it went.
//
// Usage: epoll_echo PORT [BUFSIZE]   (PORT 0: any; the port is printed)
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXFD 65536

struct conn {
	char *pend; // bytes a partial send left
	int off, len;
	int rdhup; // the peer's FIN (or an error) is in: read to the end
};

static struct conn conns[MAXFD];
static char *buf;
static int bufsize = 64 << 10;
static int ep;

static void closeconn(int fd) {
	free(conns[fd].pend);
	conns[fd].pend = NULL;
	conns[fd].rdhup = 0;
	close(fd);
}

// flush sends what a partial send left; 1 when all of it went.
static int flush(int fd) {
	struct conn *c = &conns[fd];
	while (c->off < c->len) {
		ssize_t n = send(fd, c->pend + c->off, c->len - c->off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			return -1;
		}
		c->off += n;
	}
	free(c->pend);
	c->pend = NULL;
	return 1;
}

// echo reads until the socket is empty, sending each read back at once. A
// short read means the queue was empty, so a later arrival raises a new
// edge; but a FIN that came with the data raises none, so after EPOLLRDHUP
// it reads on to the end.
static void echo(int fd) {
	for (;;) {
		ssize_t n = recv(fd, buf, bufsize, 0);
		if (n == 0) {
			closeconn(fd);
			return;
		}
		if (n < 0) {
			if (errno != EAGAIN)
				closeconn(fd);
			return;
		}
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno != EAGAIN) {
				closeconn(fd);
				return;
			}
			w = 0;
		}
		if (w < n) {
			struct conn *c = &conns[fd];
			c->pend = malloc(n - w);
			memcpy(c->pend, buf + w, n - w);
			c->off = 0;
			c->len = n - w;
			return; // read again when EPOLLOUT says it drained
		}
		if (n < bufsize && !conns[fd].rdhup)
			return; // a short read found the queue empty
	}
}

int main(int argc, char **argv) {
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: epoll_echo PORT [BUFSIZE]\n");
		return 2;
	}
	if (argc > 2)
		bufsize = atoi(argv[2]);
	if (bufsize < 1 || !(buf = malloc(bufsize))) {
		fprintf(stderr, "epoll_echo: buffer size %s: want 1 byte or more, as memory allows\n", argv[2]);
		return 2;
	}
	int one = 1;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096) || getsockname(ls, (void *)&a, &alen)) {
		fprintf(stderr, "epoll_echo: 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
	fflush(stdout);
	ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	struct epoll_event evs[256];
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "epoll_echo: epoll_wait: %s\n", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ls) {
				for (int k = 0; k < 64; k++) {
					int c = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
					if (c < 0)
						break;
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					struct epoll_event ce = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.fd = c};
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
				}
				continue;
			}
			if (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				conns[fd].rdhup = 1;
			if (conns[fd].pend) {
				int r = flush(fd);
				if (r < 0) {
					closeconn(fd);
					continue;
				}
				if (r == 0)
					continue;
			}
			echo(fd);
		}
	}
}
