-- PostgreSQL database dump
SET statement_timeout = 0;
CREATE TABLE public.users (
    id integer NOT NULL,
    email text NOT NULL,
    password_hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now()
);
COPY public.users (id, email, password_hash, created_at) FROM stdin;
1	ana@example.com	$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA	2026-01-04 10:00:00+00
\.
