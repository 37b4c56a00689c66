# The PSGI hello app answers exactly as the WSGI one does.
use strict;
use warnings;
use FindBin;
use Test::More;
use Plack::Test;
use Plack::Util;
use HTTP::Request::Common;

my $app = Plack::Util::load_psgi("$FindBin::Bin/../../apps/perl/hello.psgi");

test_psgi $app, sub {
    my $cb  = shift;
    my $res = $cb->(GET '/');
    is $res->code, 200, 'status 200';
    is $res->content, 'Hello World!', 'body';
    is $res->header('Content-Type'), 'text/plain', 'content type';
    is $res->header('Content-Length'), 12, 'content length';
};

done_testing;
