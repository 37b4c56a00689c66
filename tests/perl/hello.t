# The PSGI hello app answers exactly as the WSGI one does.
use strict;
use warnings;
use FindBin;
use Test::More;
use Plack::Test;
use Plack::Util;
use HTTP::Request::Common;
use Time::HiRes ();

my $app = Plack::Util::load_psgi("$FindBin::Bin/../../apps/perl/hello.psgi");

test_psgi $app, sub {
    my $cb  = shift;
    my $res = $cb->(GET '/');
    is $res->code, 200, 'status 200';
    is $res->content, 'Hello World!', 'body';
    is $res->header('Content-Type'), 'text/plain', 'content type';
    is $res->header('Content-Length'), 12, 'content length';

    # The conformance job's paths: the body back, and the hello world under Lint.
    $res = $cb->( POST '/echo', Content => 'ping-pong' );
    is $res->content, 'ping-pong', 'POST /echo returns the body';
    $res = $cb->( GET '/lint' );
    is $res->content, 'Hello World!', '/lint answers under Plack::Middleware::Lint';

    # The overload lens's hung and spinning requests: hello world after the seconds asked,
    # /hang asleep (next to no CPU time), /spin on the CPU (seconds of CPU time).
    for my $case ( [ '/hang', 0 ], [ '/spin', 1 ] ) {
        my ( $path, $busy ) = @$case;
        my ( $started, $cpu ) = ( Time::HiRes::time(), ( times() )[0] + ( times() )[1] );
        $res = $cb->( GET "$path?s=0.3" );
        my ( $took, $spent ) = ( Time::HiRes::time() - $started, ( times() )[0] + ( times() )[1] - $cpu );
        is $res->content, 'Hello World!', "$path answers hello world";
        cmp_ok $took, '>=', 0.3, "$path after the seconds asked";
        if ($busy) { cmp_ok $spent, '>=', 0.3, "$path on the CPU meanwhile" }
        else       { cmp_ok $spent, '<', 0.1, "$path asleep meanwhile" }
    }
};

# Lint is really in the way of /lint: an environment without SERVER_NAME (which PSGI
# requires) dies.
my %env = ( REQUEST_METHOD => 'GET', PATH_INFO => '/lint', SERVER_PORT => 80,
    SERVER_PROTOCOL => 'HTTP/1.1', 'psgi.version' => [ 1, 1 ], 'psgi.url_scheme' => 'http',
    'psgi.input' => \*STDIN, 'psgi.errors' => \*STDERR, 'psgi.multithread' => 0, 'psgi.multiprocess' => 0,
    'psgi.run_once' => 0, 'psgi.nonblocking' => 0, 'psgi.streaming' => 0, QUERY_STRING => '' );
ok !eval { $app->( \%env ); 1 }, 'Lint refuses an environment without SERVER_NAME';
like $@, qr/SERVER_NAME/, "Lint's message names it";

# Without SCRIPT_NAME (PSGI: may be left out when it would be empty) Lint judges the rest,
# and the answer names what the server left out, in the spec's words.
$env{SERVER_NAME} = 'x';
my $res = $app->( \%env );
is $res->[0], 200, 'an environment without SCRIPT_NAME is answered';
my %headers = @{ $res->[1] };
like $headers{'X-Serverbench-Lint-Note'}, qr/^SCRIPT_NAME absent; PSGI: /, 'and the omission named';
like $headers{'X-Serverbench-Lint-Note'}, qr/Plack::Lint/, 'with what the reference linter makes of it';
is $headers{'X-Serverbench-Lint-Outcome'}, 'warn', 'as a warning';

done_testing;
