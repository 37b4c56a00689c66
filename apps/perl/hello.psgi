# The PSGI application every Perl server is measured with: the same paths and
# the same bytes as apps/python/hello.py.
#   /        Hello World!
#   /json    a small object serialised per request
#   /big     a 100 KiB body
#   /large   an 8 MiB body (more than the socket buffers hold: the front profile's slow readers)
#   /cpu     about 1 ms of CPU work (iterated SHA-256)
#   /sleep   a 10 ms wait
#   /echo    the request's body back (POST; conformance probes send chunked
#            bodies and Expect: 100-continue to it)
#   /lint    the hello world under Plack::Middleware::Lint
#   /pid     the id of the process that answered
#   /leak    hello world, keeping $leak_bytes more of the worker's memory for good (the recycle
#            lens's ground truth: its leak per request is known, config app_workloads.leak)
#   /hang    hello world after ?s= seconds asleep ($hang_s unless given: longer than any server's
#            or client's timeout), a request that never answers (the overload lens's hung request)
#   /spin    hello world after ?s= seconds of CPU time spun ($spin_s unless given), a request that
#            keeps its worker busy rather than asleep
use strict;
use warnings;
use Digest::SHA qw(sha256);
use JSON::PP ();
use Plack::Middleware::Lint;
use Time::HiRes ();

my $body       = 'Hello World!';
my $big        = '0123456789abcdef' x 6400;    # 100 KiB
my $large_repeats = 524288;  # of 16 bytes: 8 MiB
my $large;    # built at the first /large a worker answers (see /large)
my $cpu_rounds = 3000;
my $json       = JSON::PP->new->canonical(1);
my $leak_bytes = 4096;
my @leaked;
my $hang_s     = 3600;    # /hang's sleep unless ?s= says: far past every timeout
my $spin_s     = 1;       # /spin's busy seconds unless ?s= says

sub cpu_s { my ( $user, $system ) = times; return $user + $system }

sub seconds {
    my ( $env, $default ) = @_;
    my ($found) = ( $env->{QUERY_STRING} // '' ) =~ /(?:^|&)s=([0-9.]+)/;
    return $found // $default;
}

sub text {
    my ( $content, $type ) = @_;
    return [
        200,
        [ 'Content-Type' => $type // 'text/plain', 'Content-Length' => length $content ],
        [$content],
    ];
}

my %routes = (
    '/json' => sub {
        text( $json->encode( { message => 'Hello, World!', server => 'serverbench', numbers => [ 1, 2, 3 ] } ),
            'application/json' );
    },
    '/big' => sub { text($big) },
    # Not at load: held by every process that loads the app, it was 8 MiB of each worker's
    # memory in every lens's figures. A count in a variable: Perl folds a constant repetition
    # into the compiled code, which every worker holds.
    '/large' => sub { $large //= '0123456789abcdef' x $large_repeats; text($large) },
    '/cpu' => sub {
        my $digest = 'serverbench';
        $digest = sha256($digest) for 1 .. $cpu_rounds;
        text( unpack 'H*', $digest );
    },
    '/sleep' => sub { Time::HiRes::sleep(0.010); text($body) },
    # Which process answered: the operations check counts each worker's share of the answers.
    '/pid' => sub { text("$$") },
    # A new string each answer, kept: its pages are written, so the worker's memory grows by it.
    '/leak' => sub { push @leaked, 'x' x $leak_bytes; text($body) },
);

sub echo {
    my $env = shift;
    my ( $input, $content ) = ( $env->{'psgi.input'}, '' );
    # A chunked body has no length: read until the server ends the stream.
    while ( $input->read( my $chunk, 65536 ) ) { $content .= $chunk }
    return text( $content, 'application/octet-stream' );
}

# The conformance job's paths: /lint is the hello world under Plack's Lint.
# The PSGI spec lets a server leave out a variable that would be empty, SCRIPT_NAME among
# them, as long as PATH_INFO is set; Plack::Lint, its reference linter, dies without
# SCRIPT_NAME all the same. So where PATH_INFO is set the linter gets the empty value and
# judges the rest, and the answer says what the server left out, in the spec's words, as a
# warning (an app run under Plack::Middleware::Lint, as plackup's development mode does,
# breaks on such a server); without PATH_INFO either, the linter judges it as it is.
my @may_be_omitted = ('SCRIPT_NAME');
my $spec_words
    = q{PSGI: "The environment is required to include these variables ... except when they'd be empty";}
    . q{ SCRIPT_NAME "may be an empty string if the application corresponds to the 'root' of the server";}
    . q{ "One of SCRIPT_NAME or PATH_INFO MUST be set" (PATH_INFO is). Plack::Lint, PSGI's reference linter,}
    . q{ dies on it all the same ("Missing mandatory env param: SCRIPT_NAME"): an app under}
    . q{ Plack::Middleware::Lint breaks on this server};
my $linted = Plack::Middleware::Lint->wrap( sub { text($body) } );
my $lint   = sub {
    my $env     = shift;
    my @omitted = grep { !exists $env->{$_} } @may_be_omitted;
    return $linted->($env) unless @omitted && defined $env->{PATH_INFO};
    my $res = $linted->( { %$env, map { $_ => '' } @omitted } );
    push @{ $res->[1] },
        'X-Serverbench-Lint-Note'    => join( ', ', @omitted ) . " absent; $spec_words",
        'X-Serverbench-Lint-Outcome' => 'warn';
    return $res;
};
# The paths that read their query: asleep, or the CPU kept busy (no sleep, no system call to yield in).
my %timed = (
    '/hang' => sub { Time::HiRes::sleep( seconds( shift, $hang_s ) ); text($body) },
    '/spin' => sub {
        # Seconds of CPU time, not of the clock: a busy machine stretches it, never shortens it.
        my $until = cpu_s() + seconds( shift, $spin_s );
        1 while cpu_s() < $until;
        text($body);
    },
);
my %probed = ( '/echo' => \&echo, '/lint' => $lint, %timed );

my $app = sub {
    my $env  = shift;
    my $path = $env->{PATH_INFO} // '/';
    return $probed{$path}->($env) if exists $probed{$path};
    my $route = $routes{$path};
    return $route ? $route->() : text($body);
};

$app;
